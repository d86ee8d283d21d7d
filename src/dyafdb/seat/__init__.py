"""A person in one seat (``dyafdb seat``): talk to a model live in the browser, recorded like any conversation.

``live`` runs the lockstep :class:`dyafdb.record.bridge.Bridge` on the wall clock with the person's
browser frames on one side; ``asr`` writes the person's text channel from Whisper; ``study`` holds
the participants and their share of the design; ``pool`` gathers participants and the models into one
results folder for one analysis; ``server`` serves the pages and the WebSockets.
docs/seat.md explains the timing and the consent text.
"""
