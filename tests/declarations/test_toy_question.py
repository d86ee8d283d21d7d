"""A judge question added in one place (a lab's own module with its class, registered by an entry
point, plus its prompt file) is asked by the judge, allowed by the config schema, counted among the
judged measures the tables compare, shown by the viewer and offered on the annotation page."""

from __future__ import annotations

import textwrap

import pandas as pd
import pytest

import plugins
from conftest import scripted_config
from dyafdb.analysis import columns as C
from dyafdb.config import validate_config
from dyafdb.errors import InputError

TOY = textwrap.dedent('''
    """A lab's own judge question: was the conversation polite?"""
    from dyafdb.judge.rubric import LabelQuestion, question


    @question("toy_polite")
    class ToyPolite(LabelQuestion):
        archetypes = ("T1-1",)
        measures = {"polite": "yes/no"}
        rater_text = "Did the two stay polite throughout?"

        def labels_for(self, answer_key):
            return ["yes", "no"]

        def row_sides(self, ctx):
            return ("a",)

        def rows(self, verdict, ctx):
            return self._rows(ctx, verdict, lambda side, label: {"polite": int(label == "yes")})
''')
PROMPT = "Here is a conversation.\n\n{situation}\n\n{transcript}\n\nWas it polite?\n{answer_format}\n"


@pytest.fixture
def toy_question(tmp_path, monkeypatch):
    plugins.install(tmp_path / "site", monkeypatch, "toy-question", {"toy_question": TOY},
                    {"dyafdb.questions": {"toy_polite": "toy_question"}})
    yield
    plugins.forget()


def _viewer_config(questions):
    cfg = scripted_config()
    cfg["viewer"] = {"annotation": {"questions": questions}}
    return cfg


def test_a_question_declared_once_is_asked_allowed_counted_and_shown(tmp_path, toy_question):
    from dyafdb.judge.prompts import load_template, template_path
    from dyafdb.judge.rubric import QUESTIONS, judge_plan
    from dyafdb.text_pairing.pairing import QUESTIONS as TEXT_QUESTIONS
    from dyafdb.viewer.questions import human_questions
    from dyafdb.viewer.summary import boolean, show

    # the judge: in the registry after the shipped ones, in the plan, its prompt file read and checked
    assert list(QUESTIONS)[-1] == "toy_polite"
    assert ("T1-1", "toy_polite") in judge_plan(["T1-1", "T2"])
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    template_path(prompts, QUESTIONS["toy_polite"]).write_text(PROMPT)
    assert "{transcript}" in load_template(prompts, QUESTIONS["toy_polite"])
    assert "toy_polite" in TEXT_QUESTIONS["T1-1"]

    # the config schema's allowed ids: derived at validation, so the new id is accepted
    assert validate_config(_viewer_config(["role_adherence", "toy_polite"]), "cfg.yaml")["viewer"]["annotation"]["questions"] \
        == ["role_adherence", "toy_polite"]

    # the measure columns: a judged measure whose label the judge chose (Table 8, judge checks)
    assert "polite" in C.JUDGED_MEASURES and "polite" in C.JUDGE_LABEL_MEASURES
    from dyafdb.analysis.judge_checks import judge_checks_table

    answers = pd.DataFrame([{**{c: "" for c in (*C.REQUIRED_COLUMNS, *C.OPTIONAL_COLUMNS)}, C.CONVERSATION: f"c{i}",
                             C.ARCHETYPE: "T1-1", C.SIDE: "a", C.MEASURE: "polite", C.JUDGE: "main",
                             C.VALUE: str(int(label == "yes")), C.LABEL: label}
                            for i, label in enumerate(["yes", "yes", "no"])])
    checks = judge_checks_table(answers)
    assert checks[["measure", "answers", "spread"]].values.tolist() == [["polite", 3, "yes 2, no 1"]]

    # the viewer shows it as yes/no, and the annotation page asks it in its generic form
    assert "polite" in boolean() and show("polite", 1, "yes") == "yes"
    transcript = {"speakers": {"A": "a", "B": "b"}, "lines": []}
    human = [q for q in human_questions("T1-1", {}, transcript) if q.question == "toy_polite"]
    assert [(q.seat, q.measure, q.text, [o["value"] for o in q.options]) for q in human] == \
        [("a", "polite", "Did the two stay polite throughout?", ["yes", "no"])]


def test_without_the_plugin_the_question_is_refused_by_the_schema():
    with pytest.raises(InputError, match=r"(?s)viewer.*toy_polite.*is not allowed; choose one of: 'role_adherence'"):
        validate_config(_viewer_config(["toy_polite"]), "cfg.yaml")
    assert "polite" not in C.JUDGED_MEASURES
