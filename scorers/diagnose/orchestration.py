"""`orchestration_quality_overall`: how well the main agent and its subagents worked together.

Seven dimensions with the weights of public research code for such a scorer; a dimension that
does not apply to a run is null and its weight is left out (the active weights are
renormalised), and a single-agent run — no subagent record, no delegation call — scores 1.0
with every dimension null. The agents are the main record and the bundle's subagent records
(Task/Agent delegations, Terminus-2 summarisation subagents). Each dimension is in [0, 1]:

- efficiency (0.25): 1 - the share of actions that repeat, in another agent, a call (tool and
  arguments) an earlier agent already made: work done twice across agents;
- utilization (0.15): 1 - Gini of the agents' assistant turns (one agent doing everything
  while the others idle scores low; null without a subagent record);
- parallelization (0.15): the share of delegation calls issued in a turn together with
  another delegation (null with fewer than two delegations);
- delegation (0.10): the share of delegations whose result came back non-empty and not an
  error (delegation calls; for summarisation subagents without a call, the share that
  answered);
- communication (0.15): the share of subagent records that end on an answer to report back;
- robustness (0.10): 0.7 * (errors followed by a non-error result in the same agent / errors;
  1.0 with no error) + 0.3 * role redundancy (the share of subagents whose tools the main
  agent also has, so it could redo their work);
- topology (0.10): the share of subagent records attached to the main one by a recorded
  reference (`_instance_metadata.subagent`): an unattached record is an orphan of the graph.
"""

from __future__ import annotations

from collections.abc import Sequence

from scorers.diagnose.detectors import delegations, finished
from scorers.diagnose.view import AgentView

DIMENSION_WEIGHTS: dict[str, float] = {
    "efficiency": 0.25,
    "utilization": 0.15,
    "parallelization": 0.15,
    "delegation": 0.10,
    "communication": 0.15,
    "robustness": 0.10,
    "topology": 0.10,
}
DIMENSIONS = tuple(DIMENSION_WEIGHTS)


def gini(values: Sequence[float]) -> float:
    """Gini coefficient (0 = equal shares); 0.0 for no work at all."""
    total = sum(values)
    if not values or total <= 0:
        return 0.0
    ordered = sorted(values)
    n = len(ordered)
    weighted = sum((2 * (i + 1) - n - 1) * value for i, value in enumerate(ordered))
    return weighted / (n * total)


def _efficiency(agents: Sequence[AgentView]) -> float | None:
    owner: dict[tuple[str, str], int] = {}
    total = repeated = 0
    for number, agent in enumerate(agents):
        for action in agent.trajectory.actions:
            key = (action.name, action.command or repr(sorted(action.args.items())))
            total += 1
            first = owner.setdefault(key, number)
            repeated += first != number
    return None if total == 0 else 1.0 - repeated / total


def _utilization(agents: Sequence[AgentView]) -> float | None:
    if len(agents) < 2:
        return None
    return 1.0 - gini([float(len(a.trajectory.turns)) for a in agents])


def _parallelization(main: AgentView) -> float | None:
    calls = delegations(main)
    if len(calls) < 2:
        return None
    per_turn: dict[int, int] = {}
    for action in calls:
        per_turn[action.turn] = per_turn.get(action.turn, 0) + 1
    return sum(1 for a in calls if per_turn[a.turn] > 1) / len(calls)


def _delegation(main: AgentView, subagents: Sequence[AgentView]) -> float | None:
    calls = delegations(main)
    if calls:
        answered = sum(
            1
            for a in calls
            if a.observation is not None
            and not a.observation.is_error
            and a.observation.text.strip()
        )
        return answered / len(calls)
    if subagents:
        return sum(1 for s in subagents if finished(s)) / len(subagents)
    return None


def _communication(subagents: Sequence[AgentView]) -> float | None:
    if not subagents:
        return None
    return sum(1 for s in subagents if finished(s)) / len(subagents)


def _robustness(main: AgentView, subagents: Sequence[AgentView]) -> float:
    errors = recovered = 0
    for agent in (main, *subagents):
        observations = agent.trajectory.observations
        for index, observation in enumerate(observations):
            if observation.is_error:
                errors += 1
                following = observations[index + 1] if index + 1 < len(observations) else None
                recovered += following is not None and not following.is_error
    recovery = 1.0 if errors == 0 else recovered / errors
    main_tools = main.declared_tools
    redundant = [not s.declared_tools or s.declared_tools <= main_tools for s in subagents]
    redundancy = sum(redundant) / len(redundant) if redundant else 1.0
    return 0.7 * recovery + 0.3 * redundancy


def _topology(subagents: Sequence[AgentView]) -> float | None:
    if not subagents:
        return None
    linked = sum(1 for s in subagents if s.metadata.get("subagent"))
    return linked / len(subagents)


def dimensions(main: AgentView, subagents: Sequence[AgentView]) -> dict[str, float | None]:
    """Every dimension's value; all null for a single-agent run."""
    if not subagents and not delegations(main):
        return dict.fromkeys(DIMENSIONS)
    agents = (main, *subagents)
    values: dict[str, float | None] = {
        "efficiency": _efficiency(agents),
        "utilization": _utilization(agents),
        "parallelization": _parallelization(main),
        "delegation": _delegation(main, subagents),
        "communication": _communication(subagents),
        "robustness": _robustness(main, subagents),
        "topology": _topology(subagents),
    }
    return {k: None if v is None else round(v, 4) for k, v in values.items()}


def active_weights(values: dict[str, float | None]) -> dict[str, float | None]:
    """The weights of the dimensions that apply, renormalised to sum to 1 (null elsewhere)."""
    total = sum(DIMENSION_WEIGHTS[k] for k, v in values.items() if v is not None)
    return {
        k: None if v is None or total == 0 else round(DIMENSION_WEIGHTS[k] / total, 4)
        for k, v in values.items()
    }


def overall(values: dict[str, float | None]) -> float:
    """The weighted mean of the dimensions that apply; 1.0 when none does."""
    active = [(DIMENSION_WEIGHTS[k], v) for k, v in values.items() if v is not None]
    total = sum(w for w, _ in active)
    return 1.0 if total == 0 else sum(w * v for w, v in active) / total
