"""The main job: a byte-level GPT trained with data x tensor x pipeline parallelism, every
kind of traffic through mpiucc's compressed communication.

    mpiexec -n 2 python -m pycomm.train --preset demo

Modules: ``model`` (the single-process reference), ``tensor_parallel`` (Megatron layers and the
compressed all_reduce autograd functions), ``pipe_link`` and ``pipeline`` (compressed send/recv
and the GPipe schedule), ``data_parallel`` (DDP with pycomm's hooks), ``groups`` (the rank
layout and its mpiucc process groups), ``data``, ``loop``, ``report``, ``plot``.
"""
