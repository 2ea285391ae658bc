"""The journal: every change the harness makes, written before it is made, and its exact undo."""
