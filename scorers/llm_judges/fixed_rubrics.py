"""The fixed checklist's 15 checks and their anchored 1-5 rubrics (llm-judges.md).

Every check has its own anchors on the shared scale (1 not done / seriously flawed,
2 attempted but ineffective, 3 mostly done with clear shortcomings, 4 done well with minor
issues, 5 excellent): a bare "rate 1-5" drifts between runs and models, anchors that name
observable behaviour do not. The rubric text is part of the checklist version — change a
word here and bump `FIXED_CHECKLIST_VERSION`.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CATEGORIES", "CHECK_KEYS", "FIXED_CHECKLIST_VERSION", "Category", "Check"]

FIXED_CHECKLIST_VERSION = "fixed-checklist-v1"


@dataclass(frozen=True)
class Check:
    """One scored check: what it asks and what each score 1..5 looks like."""

    key: str
    question: str
    anchors: tuple[str, str, str, str, str]


@dataclass(frozen=True)
class Category:
    """A group of checks whose normalised mean is one output score (`output_key`)."""

    letter: str
    name: str
    output_key: str
    checks: tuple[Check, ...]


CATEGORIES: tuple[Category, ...] = (
    Category("F", "Problem understanding", "llm_f_problem_understanding", (
        Check("F1_diagnosis_depth", "Did the agent find the root cause, not just a symptom?", (
            "No diagnosis, or the stated cause is wrong; no sign of investigating the cause.",
            "Investigated, but stopped at a symptom or a guess; cause unsupported or wrong.",
            "Found the right area and a plausible cause; explanation shallow or partly unchecked.",
            "Identified the root cause with evidence (code read, error traced); minor gaps.",
            "Pinpointed the root cause, traced it through the code and showed why it fails.",
        )),
        Check("F2_scope_precision", "Did the agent address exactly what was asked?", (
            "Solved a different problem or ignored the main requirement.",
            "Addressed part of the request; major requirements missed or misread.",
            "Main requirement met; secondary requirements missed or unrequested scope added.",
            "All requirements met, with minor scope drift.",
            "Exactly the requested scope, implicit constraints (APIs, conventions) included.",
        )),
        Check("F3_plan_quality", "Did the agent work to a sensible, evolving plan?", (
            "No discernible plan; actions are random or absent.",
            "A plan is stated but is unworkable or not followed.",
            "A workable but vague or partly followed plan; notable detours.",
            "A clear, workable plan, followed and updated; minor gaps.",
            "A concise, well-ordered plan (understand, reproduce, change, verify), revised "
            "when the facts changed.",
        )),
    )),
    Category("G", "Solution quality", "llm_g_solution_quality", (
        Check("G1_fix_elegance", "Is the change a clean, idiomatic fix in the right place?", (
            "No change, a wrong change, or a hack (special-casing a test, silencing errors).",
            "Attempts the fix but is convoluted, in the wrong layer, or only partly correct.",
            "Correct and working, but clumsy, duplicated or out of style with the codebase.",
            "Clean, idiomatic and at the right place; small stylistic issues.",
            "The fix a maintainer would write: at the root cause, idiomatic, consistent.",
        )),
        Check("G2_change_minimality", "Does the change touch only what the task needs?", (
            "No change, or sweeping unrelated edits, rewrites or deleted code.",
            "Many unneeded edits (reformatting, unrelated refactors, debug leftovers).",
            "Focused overall, with some unneeded changes or leftovers (stray files, prints).",
            "Focused, with one small unnecessary change.",
            "Only the necessary lines changed; no leftovers; temporary files removed.",
        )),
        Check("G3_robustness", "Does the solution handle edge cases without regressions?", (
            "No solution, or it fails on common inputs or breaks existing behaviour.",
            "Handles only the reported case; obvious edge cases break.",
            "Handles the main case and some edge cases; clear gaps remain.",
            "Handles the relevant edge cases (empty, None, boundaries, errors); minor gaps.",
            "Handles edge cases thoroughly and preserves existing behaviour and interfaces.",
        )),
    )),
    Category("H", "Reasoning quality", "llm_h_reasoning_quality", (
        Check("H1_reasoning_coherence", "Do reasoning and actions follow from the evidence?", (
            "No visible reasoning, or reasoning contradicts the evidence or the actions.",
            "Reasoning present but with leaps, contradictions or unsupported conclusions.",
            "Mostly coherent; occasional unsupported jumps or ignored observations.",
            "Coherent and grounded in what was observed; minor lapses.",
            "Every step follows from the observations; conclusions clearly justified.",
        )),
        Check("H2_hypothesis_driven", "Does the agent form hypotheses and test them?", (
            "No hypotheses: blind edits or trial and error.",
            "Hypotheses stated but not tested, or tested with checks that cannot tell them apart.",
            "Some hypotheses tested, others simply assumed.",
            "Forms hypotheses and tests them with targeted actions; minor gaps.",
            "Systematically forms hypotheses, runs discriminating checks, updates on results.",
        )),
        Check("H3_adaptability", "Does the agent change course when results call for it?", (
            "Repeats failing actions or ignores errors and contrary output.",
            "Notices problems but only tweaks the same failing approach.",
            "Adapts, but after delay or several wasted attempts.",
            "Adapts promptly to most setbacks and new information.",
            "Reads every setback correctly and switches strategy promptly and effectively.",
        )),
    )),
    Category("I", "Verification rigor", "llm_i_verification_rigor", (
        Check("I1_reproduction", "Did the agent observe the problem before changing code?", (
            "No attempt to reproduce or observe the failure or current behaviour.",
            "Tried, but the reproduction failed or missed the bug, and the agent went on anyway.",
            "Reproduced indirectly (e.g. an existing test's output) or only partly.",
            "Reproduced the failure with a test or script before editing; minor gaps.",
            "Reproduced the exact failure with a minimal case and confirmed why it fails.",
        )),
        Check("I2_fix_verification", "Did the agent show that the change works?", (
            "No verification after the change (or no change at all).",
            "Verification failed or was ignored, or success is claimed without evidence.",
            "Some check shows the change works, but not the reproduction or relevant tests.",
            "Re-ran the reproduction and the relevant tests, which pass; minor gaps.",
            "Re-ran reproduction, relevant tests and regression checks; all pass, read closely.",
        )),
        Check("I3_test_quality", "How good are the tests the agent wrote or ran?", (
            "No tests written or run.",
            "Tests written or run but irrelevant, broken, or not exercising the change.",
            "Relevant tests run or a basic test added; key cases missed.",
            "Relevant tests covering the main case and some edge cases.",
            "Targeted tests for the change and its edge cases, in the project's test style.",
        )),
    )),
    Category("J", "Efficiency", "llm_j_efficiency", (
        Check("J1_navigation_efficiency", "Did the agent find the relevant code directly?", (
            "Aimless exploration; never found the relevant code.",
            "Found it only after extensive wandering (many irrelevant reads and listings).",
            "Found it with some unnecessary exploration.",
            "Mostly direct (search, then read); few detours.",
            "Went straight to the relevant code with targeted searches; no wasted reads.",
        )),
        Check("J2_tool_proficiency", "Are the tools used correctly and to good effect?", (
            "Frequent malformed calls or wrong tools; tool errors left unresolved.",
            "Many tool errors or misuse (shell where a dedicated tool fits, flooding output).",
            "Tools mostly used correctly; some errors or suboptimal choices.",
            "Correct, fitting tool use; rare minor errors.",
            "The best tool for each step, well-formed arguments, bounded output, no errors.",
        )),
        Check("J3_iteration_economy", "Did the agent get there in few, purposeful steps?", (
            "Loops or repeats identical actions, or stops without a result.",
            "Many redundant or repeated steps; much wasted effort.",
            "Reached the result with noticeable redundancy.",
            "Few wasted steps.",
            "Every step purposeful, nothing repeated, stopped as soon as the work was done.",
        )),
    )),
)  # fmt: skip

CHECK_KEYS: tuple[str, ...] = tuple(check.key for cat in CATEGORIES for check in cat.checks)
