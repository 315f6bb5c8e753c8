"""Prompts and their variation: the shipped prompt templates, in-context paraphrases and the rule a paraphrase
must pass."""
