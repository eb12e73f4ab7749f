"""Zero-weight diagnostics of TQS V2 (§11): OEC, IAC, PED, PSN, TTE, SCP, reproduce_first."""

from __future__ import annotations

import math

from scorers.tqs_v2.shell import is_verification_run
from scorers.tqs_v2.speedups import character_entropies, contains_any
from scorers.tqs_v2.test_files import is_test_file
from scorers.tqs_v2.tools import ACTION_KINDS
from scorers.tqs_v2.trajectory import Action, Trajectory

_INTENT_KEYWORDS = {
    "read": ("read", "look", "check", "examine", "open", "view", "inspect", "show"),
    "write": (
        "write",
        "edit",
        "modify",
        "fix",
        "change",
        "update",
        "patch",
        "add",
        "insert",
        "replace",
    ),
    "bash": ("run", "execute", "test", "try", "install", "pip", "npm", "build"),
    "search": ("search", "find", "grep", "locate", "list", "explore"),
    "submit": ("finish", "submit", "complete", "done"),
}
_TTE_KINDS = 7
_KIND_CODES = {kind: code for code, kind in enumerate(ACTION_KINDS)}


_OEC_CHARS = 5000


def observation_entropy_collapse(trajectory: Trajectory) -> float | None:
    observations = trajectory.observations
    if len(observations) < 5:
        return None
    entropies = character_entropies([o.text for o in observations], _OEC_CHARS)
    baseline = sum(entropies[:5]) / 5
    if baseline == 0:
        return None
    last = len(entropies) - 1
    lowest = min((entropies[0] + entropies[1]) / 2, (entropies[last - 1] + entropies[last]) / 2)
    for i in range(1, last):
        window = (entropies[i - 1] + entropies[i] + entropies[i + 1]) / 3
        if window < lowest:
            lowest = window
    return min(max(lowest / baseline, 0.0), 1.0)


def _intent_class(trajectory: Trajectory, turn_index: int) -> str | None:
    turn = trajectory.turns[turn_index]
    if trajectory.scaffold == "terminus2":
        answer = turn.answer or {}
        if answer.get("task_complete"):  # a finishing answer is a submit, commands or not
            return "submit"
        if answer.get("commands"):  # any command, even a blank keystroke, is a bash turn
            return "bash"
        return None
    for action in turn.actions:
        if action.kind not in ("think", "other"):
            return action.kind
    return None


def intent_action_consistency(trajectory: Trajectory) -> float | None:
    matches = 0
    total = 0
    for turn in trajectory.turns:
        if _blank(turn.reasoning) and _blank(turn.text):
            continue
        kind = _intent_class(trajectory, turn.index)
        if kind is None:
            continue
        total += 1
        # Keywords have no spaces, so looking in each part is looking in the joined text.
        keywords = _INTENT_KEYWORDS[kind]
        if contains_any(turn.reasoning, keywords, True) or contains_any(turn.text, keywords, True):
            matches += 1
    return matches / total if total >= 3 else None


def _blank(text: str) -> bool:
    return not text or text.isspace()


def _jaccard(a: set[str], b: set[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def post_error_diversity(trajectory: Trajectory) -> float | None:
    """Mean change of strategy after each error observation.

    The action that produced the error (for a Terminus-2 screen shared by several commands,
    the first of them) is compared with the first action of the next turn that acts: the
    reference compares strategies between turns, not between parallel calls of one turn, and
    reads a tool's targets from its first call in the message.
    """
    actions = trajectory.actions
    scores = []
    seen: set[int] = set()
    for i, action in enumerate(actions):
        observation = action.observation
        if observation is None or not observation.is_error or id(observation) in seen:
            continue
        seen.add(id(observation))
        following = _first_action_after_turn(actions, i)
        if following is None:
            continue
        type_changed = 1.0 if following.name != action.name else 0.0
        first_call = action.first_of_tool or action
        overlap = _jaccard(set(first_call.targets), set(following.targets))
        scores.append((type_changed + (1.0 - overlap)) / 2)
    return sum(scores) / len(scores) if scores else None


def _first_action_after_turn(actions: list[Action], index: int) -> Action | None:
    turn = actions[index].turn
    for following_index in range(index + 1, len(actions)):
        if actions[following_index].turn != turn:
            return actions[following_index]
    return None


def progressive_scope_narrowing(trajectory: Trajectory) -> float | None:
    turns = trajectory.turns
    if len(turns) < 10:
        return None
    per_turn = [{t for a in turn.actions for t in a.targets} for turn in turns]
    scope = []
    for i in range(len(per_turn)):
        union: set[str] = set()
        for files in per_turn[max(0, i - 4) : i + 1]:
            union |= files
        scope.append(len(union))
    late = scope[len(scope) // 2 :]
    if len(late) < 3:
        return None
    concordant, discordant = _kendall_pairs(late)
    if concordant + discordant == 0:
        return 0.5
    tau = (concordant - discordant) / (concordant + discordant)
    return (1 - tau) / 2


def _kendall_pairs(values: list[int]) -> tuple[int, int]:
    """(pairs i < j with values[j] > values[i], pairs with values[j] < values[i]).

    Scope sizes take few distinct values, so each value is compared with the counts of the
    distinct earlier values rather than with every earlier value.
    """
    seen: dict[int, int] = {}
    concordant = discordant = 0
    for value in values:
        for earlier, count in seen.items():
            if value > earlier:
                concordant += count
            elif value < earlier:
                discordant += count
        seen[value] = seen.get(value, 0) + 1
    return concordant, discordant


def tool_transition_entropy(trajectory: Trajectory) -> float | None:
    actions = trajectory.actions
    if len(actions) < 3:
        return None
    # Bigrams as small ints (no tuple per pair), counted in first-seen order.
    bigrams: dict[int, int] = {}
    previous = _KIND_CODES[actions[0].kind]
    for action in actions[1:]:
        code = _KIND_CODES[action.kind]
        bigram = previous * _TTE_KINDS + code
        bigrams[bigram] = bigrams.get(bigram, 0) + 1
        previous = code
    total = len(actions) - 1
    entropy = -sum(c / total * math.log2(c / total) for c in bigrams.values())
    return min(entropy / math.log2(_TTE_KINDS * _TTE_KINDS), 1.0)


def _first_successful_write_turn(trajectory: Trajectory) -> int | None:
    for action in trajectory.actions:
        if action.is_write and action.succeeded:
            return action.turn + 1
    return None


def successful_change_position(trajectory: Trajectory) -> float:
    turn = _first_successful_write_turn(trajectory)
    if turn is None or not trajectory.turns:
        return 0.0
    r = turn / len(trajectory.turns)
    if 0.2 <= r <= 0.5:
        return 1.0
    d = 0.2 - r if r < 0.2 else r - 0.5
    return math.exp(-(d * d) / (2 * 0.2 * 0.2))


def _source_edit_paths(trajectory: Trajectory, action: Action) -> tuple[str, ...]:
    if trajectory.scaffold == "terminus2":
        return action.editor_paths + action.shell_paths
    return action.editor_paths


def reproduce_first(trajectory: Trajectory) -> float | None:
    verified = False
    for action in trajectory.actions:
        if any(not is_test_file(p) for p in _source_edit_paths(trajectory, action)):
            return 1.0 if verified else 0.0
        if action.command and is_verification_run(action.command):
            verified = True
    return None
