"""Equal message counts over TCP: ``msgcount.c`` streams COUNT messages of SIZE bytes and
times them the way perftest's ``ib_send_bw`` times its ``-n`` messages (first send to the
receiver having the last), so S1's bandwidth claims compare a count with the same count.

``build`` compiles the program on first use (see :mod:`harness.cbuild`); ``spec`` checks
a request and reads the program's JSON lines; ``server`` runs its server under the
journal::

    binary = build_on(node_b)
    with server(journal, node_b, binary, "198.18.1.2", 47200):
        res = node_a.run(CountRun(300, (4, 64, 512)).client_argv(binary, "198.18.1.2", 47200))
    rows = parse_output(res.stdout)     # one CountResult per size; failed sizes say why
"""

from .build import PROGRAM, BuildFailed, build_local, build_on
from .server import server
from .spec import MAX_COUNT, MAX_SIZE, CountResult, CountRun, parse_output

__all__ = ["MAX_COUNT", "MAX_SIZE", "PROGRAM", "BuildFailed", "CountResult", "CountRun",
           "build_local", "build_on", "parse_output", "server"]
