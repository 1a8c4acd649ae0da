"""The GPipe schedule: every micro-batch forward through the stages, then every backward.

Stage s receives micro-batch m's activations from stage s-1 and sends its own to s+1; in the
backward pass (micro-batches in reverse order) the activation gradients flow the other way. All
receives of a step are posted at its start, sends leave in the background (``PipeLink``), so
a stage computes micro-batch m+1 while m travels. GPipe keeps every micro-batch's activations
until the backward; 1F1B would bound that memory at the same bubble, which does not matter at
the sizes this CPU job trains.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from pycomm.train.data_parallel import DataParallel
from pycomm.train.groups import ParallelGroups
from pycomm.train.model import ModelConfig, lm_loss
from pycomm.train.pipe_link import PipeLink
from pycomm.train.stage import PipelineStage


class PipelineRunner:
    """Runs one stage's part of the schedule for a list of micro-batches."""

    def __init__(
        self,
        stage: PipelineStage,
        data_parallel: DataParallel,
        link: PipeLink | None,
        groups: ParallelGroups,
        cfg: ModelConfig,
    ) -> None:
        self.stage, self.dp, self.link, self.cfg = stage, data_parallel, link, cfg
        self.prev = groups.pp_rank - 1  # ranks in the PP group are stage numbers
        self.next = groups.pp_rank + 1

    def run(
        self,
        micro_batches: list[tuple[torch.Tensor, torch.Tensor]],
        train: bool,
        mid_step: Callable[[], None] | None = None,
    ) -> float | None:
        """Forward (and, if ``train``, backward) of the micro-batches; ``mid_step`` is called
        between the forwards and the backwards (the fault drill).

        Returns the sum over micro-batches of their mean loss divided by their count (the
        batch's mean loss) on the last stage, None elsewhere. Gradients accumulate into the
        stage's parameters, reduced over DP after the last backward.
        """
        stage, link, count = self.stage, self.link, len(micro_batches)
        shape = (micro_batches[0][0].shape[0], micro_batches[0][0].shape[1], self.cfg.width)
        acts = grads = None
        if not stage.is_first:
            acts = [link.post_recv(shape, self.prev, m) for m in range(count)]
        if train and not stage.is_last:
            grads = [link.post_recv(shape, self.next, m) for m in range(count)]
        inputs, outputs = [], []
        loss_sum = torch.zeros(())
        with torch.set_grad_enabled(train):
            for m, (tokens, targets) in enumerate(micro_batches):
                x = tokens if acts is None else link.wait(acts[m]).requires_grad_(train)
                y = self.dp.forward(x)
                if stage.is_last:
                    y = lm_loss(y, targets) / count
                    loss_sum += y.detach()
                else:
                    link.send(y, self.next, m)
                inputs.append(x)
                outputs.append(y)
        if mid_step is not None:
            mid_step()
        if train:
            for m in reversed(range(count)):
                grad = None if grads is None else link.wait(grads[m])
                self.dp.backward(outputs[m], grad, last=m == 0)
                if not stage.is_first:
                    link.send(inputs[m].grad, self.prev, m)
                outputs[m] = inputs[m] = None  # free the micro-batch's graph and activations
        if link is not None:
            link.finish_sends()
        return float(loss_sum) if stage.is_last else None
