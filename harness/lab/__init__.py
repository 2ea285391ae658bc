"""The lab: a topology declared as data, realised as network namespaces here or in a VM, and verified."""
