"""The consent text the seat's page shows before the microphone opens (docs/seat.md quotes it).

Its digest is stored in each recording's meta.json (``seat.consent``), so a recording says which
wording its person agreed to; change the text and the digest changes with it.
"""

from __future__ import annotations

import hashlib

CONSENT = """\
Before the microphone opens, please read this.

What is recorded: the sound from your microphone while the conversation runs ({window_s:g} seconds, \
from the moment you press Start until it ends; nothing before or after), the computer's voice, and a \
written transcript of your words made by speech recognition on this computer. The recording is then \
measured and rated like the conversations between models.

Where it is kept: on this computer only, in the folder {folder}. Nothing is sent anywhere else: this \
page, the speech recognition and the model all run on this machine, and the page loads nothing from \
the internet.

Who you are: {who}. Do not say your name or anything private in the conversation; play the role \
on your card.

You can stop at any time with Abandon: nothing of that conversation is kept. You can ask whoever runs \
this study to delete your recordings.
"""


def consent_text(window_s: float, folder: str, participant: str | None) -> str:
    who = (f"your recordings are filed under the code {participant}, never under your name" if participant
           else "recordings carry no name, only the conversation's id")
    return CONSENT.format(window_s=window_s, folder=folder, who=who)


def consent_digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]
