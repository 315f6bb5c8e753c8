"""The project's own small question set: short factual questions with a common wrong belief each.

Written for this project (not taken from any benchmark) so the quickstart runs without data files.
Each entry: question, best answer, further correct answers, incorrect answers.
"""

from __future__ import annotations

from a2c.qa.data.records import QARecord

_ENTRIES: tuple[tuple[str, str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("What is the largest planet in our solar system?", "Jupiter",
     ("The largest planet is Jupiter", "Jupiter is the biggest planet"),
     ("Saturn", "The Earth", "The Sun is the largest planet")),
    ("How many legs does a spider have?", "Eight",
     ("A spider has eight legs", "8 legs"),
     ("Six", "A spider has six legs", "Ten legs")),
    ("What happens to a bat's sight in daylight?", "Bats can see in daylight",
     ("Most bats can see fine", "Bats are not blind"),
     ("Bats are blind", "Bats cannot see at all", "Bats only see at night")),
    ("Which gas do plants take in from the air to make sugar?", "Carbon dioxide",
     ("Plants take in carbon dioxide", "CO2"),
     ("Oxygen", "Nitrogen", "Plants take in oxygen to make sugar")),
    ("What is the boiling point of water at sea level in degrees Celsius?", "100 degrees Celsius",
     ("Water boils at 100 degrees Celsius", "100"),
     ("90 degrees Celsius", "212 degrees Celsius", "50 degrees")),
    ("Does a goldfish really remember things for only three seconds?",
     "No, goldfish can remember things for months",
     ("No", "Goldfish have memories lasting weeks or months"),
     ("Yes, a goldfish forgets after three seconds", "Yes", "Goldfish have no memory at all")),
    ("Who wrote the play Romeo and Juliet?", "William Shakespeare",
     ("Shakespeare", "It was written by Shakespeare"),
     ("Charles Dickens", "Christopher Marlowe", "Jane Austen")),
    ("What is the chemical symbol for gold?", "Au",
     ("The symbol for gold is Au",),
     ("Go", "Gd", "Ag")),
    ("Can lightning strike the same place twice?", "Yes, lightning can strike the same place more than once",
     ("Yes", "Tall buildings are struck many times a year"),
     ("No, lightning never strikes the same place twice", "No", "Lightning only strikes once per place")),
    ("How many continents are there on Earth by the usual count?", "Seven",
     ("There are seven continents", "7"),
     ("Five", "Nine", "There are twelve continents")),
    ("What colour is the blood in human veins?", "Red",
     ("Human blood is always red", "Dark red"),
     ("Blue", "Veins carry blue blood", "Green")),
    ("Which is the closest star to the Earth?", "The Sun",
     ("The Sun is the nearest star", "Our Sun"),
     ("Proxima Centauri", "Sirius", "The North Star")),
)


def load_quickstart() -> list[QARecord]:
    return [QARecord(id=f"quickstart-{i}", question=q, best_answer=best, correct=(best, *more),
                     incorrect=wrong, category="quickstart")
            for i, (q, best, more, wrong) in enumerate(_ENTRIES)]
