"""The field's question sets, each read from the Hugging Face hub or a local copy in its layout.

TriviaQA (`rc.nocontext`), Natural Questions open, SciQ, CoQA (one record per turn, asked with its story)
and SQuAD v1.1 (asked with its passage): the sets the uncertainty-estimation literature reports on. Each
module says the set's hub id, split and fields, which of them are the gold answers, and what is shown
with the question. All give gold answers only (no incorrect references): score them with a gold-answer
rule (`accuracy.rule: exact_match | token_f1 | rouge_l`). `FIELD_SETS` is what `a2c.qa.data` registers.
"""

from __future__ import annotations

from a2c.qa.data.sets.base import FieldSet, load_local
from a2c.qa.data.sets.coqa import COQA, coqa_context
from a2c.qa.data.sets.nq_open import NQ_OPEN
from a2c.qa.data.sets.sciq import SCIQ
from a2c.qa.data.sets.squad import SQUAD
from a2c.qa.data.sets.triviaqa import TRIVIAQA

FIELD_SETS: tuple[FieldSet, ...] = (TRIVIAQA, NQ_OPEN, SCIQ, COQA, SQUAD)

__all__ = ["COQA", "FIELD_SETS", "NQ_OPEN", "SCIQ", "SQUAD", "TRIVIAQA", "FieldSet", "coqa_context",
           "load_local"]
