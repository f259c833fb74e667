"""How a scheduler's sigmas are used: host reads (a sync each step) versus uses that need the device."""

from __future__ import annotations

import ast
import textwrap

from codemods.analysis.models.hot_paths import hot_paths
from codemods.analysis.placement.class_places import class_places
from codemods.analysis.schedules.sigma_flow import SigmaFlow, SigmaFlowAnalysis
from codemods.source import SourceFile, dotted_name


def _flow(code: str) -> SigmaFlow:
    source = SourceFile("scheduler.py", textwrap.dedent(code))
    cls = next(n for n in source.tree.body if isinstance(n, ast.ClassDef))
    places = class_places(source, cls)

    def is_source(node: ast.expr):
        is_sigmas = isinstance(node, ast.Attribute) and node.attr == "sigmas" and dotted_name(node.value) == "self"
        return "vector" if is_sigmas and isinstance(node.ctx, ast.Load) else None

    methods = [m for m in places.methods if m not in ("__init__", "set_timesteps")]
    return SigmaFlowAnalysis(cls, is_source, hot_paths(source).hot_function, places.function).run(methods)


def test_a_python_comparison_of_a_sigma_in_step_is_a_host_read() -> None:
    flow = _flow("""
    class HeunScheduler(SchedulerMixin):
        def step(self, model_output, timestep, sample, s_tmin=0.0, s_tmax=float("inf")):
            sigma = self.sigmas[self.step_index]
            gamma = 0.5 if s_tmin <= sigma <= s_tmax else 0.0
            return sample + (sigma * (gamma + 1)) * model_output
    """)
    assert [(u.line, u.why) for u in flow.host_reads] == [(5, "compares it in Python")]
    assert flow.device_needs == []


def test_arithmetic_with_one_sigma_needs_nothing_on_the_device() -> None:
    flow = _flow("""
    class FlowScheduler(SchedulerMixin):
        def step(self, model_output, timestep, sample):
            sigma, sigma_next = self.sigmas[self.step_index], self.sigmas[self.step_index + 1]
            dt = sigma_next - sigma
            self.dt = dt
            return sample + torch.exp(dt) * model_output
    """)
    assert flow.host_reads == [] and flow.device_needs == []


def test_the_vector_against_device_tensors_needs_the_device() -> None:
    flow = _flow("""
    class FlowScheduler(SchedulerMixin):
        def step(self, model_output, timestep, sample, per_token_timesteps: torch.Tensor):
            sigmas = self.sigmas[:, None, None]
            lower_mask = sigmas < per_token_timesteps[None] - 1e-6
            return sample
    """)
    assert [u.why for u in flow.device_needs] == ["computes with the vector next to device tensors"]


def test_a_sigma_given_dimensions_needs_the_device() -> None:
    flow = _flow("""
    class RFScheduler(SchedulerMixin):
        def step(self, model_output, timestep, sample):
            sigma = self.sigmas[self.step_index]
            sigma_b = sigma.view(1)
            return sample - sigma_b * model_output
    """)
    assert [u.line for u in flow.device_needs] == [5]


def test_moving_the_sigmas_per_call_needs_them_where_they_go() -> None:
    flow = _flow("""
    class FlowScheduler(SchedulerMixin):
        def scale_noise(self, sample, timestep, noise):
            sigmas = self.sigmas.to(device=sample.device, dtype=sample.dtype)
            return sample
    """)
    assert [u.line for u in flow.device_needs] == [4]


def test_a_sigma_handed_to_a_method_is_followed_into_it() -> None:
    flow = _flow("""
    class UniPCScheduler(SchedulerMixin):
        def _alpha(self, sigma):
            return 1 / ((sigma**2 + 1) ** 0.5)

        def step(self, model_output, timestep, sample):
            alpha = self._alpha(self.sigmas[self.step_index])
            if alpha > 0.5:
                return sample
            return model_output
    """)
    assert [(u.line, u.why) for u in flow.host_reads] == [(8, "compares it in Python")]


def test_a_list_of_sigma_values_turned_into_a_tensor_is_a_host_read() -> None:
    flow = _flow("""
    class UniPCScheduler(SchedulerMixin):
        def step(self, model_output, timestep, sample):
            rks = []
            for i in range(2):
                rks.append(self.sigmas[self.step_index - i] / 2)
            rks = torch.tensor(rks, device=sample.device)
            return sample * rks[0]
    """)
    assert [u.why for u in flow.host_reads] == ["builds a tensor from it with `torch.tensor`"]
    assert flow.device_needs == []
