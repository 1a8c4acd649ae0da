"""What pycomm exports from its collectives, written once: ``pycomm.collectives.__all__``, and
what ``import pycomm`` loads from there on first use. It imports nothing, so both read it."""

COLLECTIVES = (
    "CodecSpec",
    "CommStats",
    "CommTimeout",
    "ErrorFeedback",
    "PeerArgumentError",
    "Request",
    "SettingsMismatchError",
    "abort_on_error",
    "allgather",
    "allreduce",
    "bcast",
    "choices",
    "get_timeout",
    "iallgather",
    "iallreduce",
    "ibcast",
    "irecv",
    "ireduce_scatter",
    "isend",
    "recv",
    "reduce_scatter",
    "send",
    "set_timeout",
)
