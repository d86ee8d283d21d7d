"""Conversation pages state an answer's fate under the run's answer policy, as the index does."""

from __future__ import annotations

from types import SimpleNamespace

from dyafdb.analysis.answers import AnswerPolicy
from dyafdb.viewer import pages, site


def test_conversation_pages_use_the_configs_answer_policy(monkeypatch):
    config = {"analysis": {"answers": {"failed_check": "leave_out", "contradicted": "count"}}}
    seen = {}

    def page(**kwargs):
        seen.update(kwargs)
        return pages.judges_card(kwargs["judges"], kwargs["records"], kwargs["speakers"], kwargs.get("policy"))

    monkeypatch.setattr(site.pages, "conversation_page", page)
    monkeypatch.setattr(site, "player_data", lambda *a, **k: {})
    monkeypatch.setattr(site, "prompts", lambda *a, **k: {})
    record = {"judge": "main", "question": "agreed_price", "seat": None, "label": "100", "valid": True,
              "checks": ["price not said in the transcript"], "rows": [], "replies": ["ANSWER: 100"]}
    src = SimpleNamespace(row=None, meta={}, measures=None, judged=[record], garble=None, speakers={"a": "A", "b": "B"})
    ctx = SimpleNamespace(config=config, judges=["main"], picks=[], annotation_only=False)
    html = site._conversation_page(ctx, src, SimpleNamespace(file="x.ogg"))
    assert seen["policy"] == AnswerPolicy(failed_check="leave_out", contradicted="count")
    # the schema's default would say "counted as none"; this run leaves such answers out
    assert "left out in the tables" in html and "counted as none" not in html
