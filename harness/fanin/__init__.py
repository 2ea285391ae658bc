"""The fan-in traffic generator of study S3: one reducer pulls from N mappers at once.

``fanin.c`` is the program (built on first use by ``build``); ``spec``
checks what it is asked to do and parses its JSON-lines output; ``reducer``
starts the mappers under the journal and runs the reducer::

    binary = build_on(reducer_node)
    listens = [mapper_address("tcp", ip, 47000, i) for i, ip in enumerate(ips)]
    with mapper_fleet(journal, mapper_nodes, listens, "tcp", binary) as fleet:
        result = run_reducer(reducer_node, binary, ReduceSpec("tcp", 4096, 100), listens)
    result.output.measured()      # one dict per round: duration_ns, rate_mbit, ...
"""

from .build import BuildFailed, build_local, build_on
from .reducer import (
    FaninError,
    MapperFleet,
    ReduceResult,
    mapper_cpu_ticks,
    mapper_fleet,
    run_reducer,
)
from .spec import (
    FEATURES,
    PROTOCOLS,
    TIPC_SERVICE_TYPE,
    FaninOutput,
    ReduceSpec,
    SocketOptions,
    mapper_address,
    parse_output,
)

__all__ = [
    "FEATURES",
    "PROTOCOLS",
    "TIPC_SERVICE_TYPE",
    "BuildFailed",
    "FaninError",
    "FaninOutput",
    "MapperFleet",
    "ReduceResult",
    "ReduceSpec",
    "SocketOptions",
    "build_local",
    "build_on",
    "mapper_address",
    "mapper_cpu_ticks",
    "mapper_fleet",
    "parse_output",
    "run_reducer",
]
