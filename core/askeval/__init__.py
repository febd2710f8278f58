"""Ask AI's evaluation: the question sets, their scorers, the intent model's training and the CLI commands.

Kept outside :mod:`core.answer` because it opens a runtime (``core/answer`` only receives
the parts it uses, :class:`core.answer.kit.AskKit`).
"""
