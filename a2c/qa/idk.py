"""The rank prompt's last option: the don't-know answer every Ask-to-Choose prompt offers.

Its own module because the config's default (`ask_to_choose.idk_text`) and the rank prompts both read it, and
the config must load without the rank and row modules (and numpy with them).
"""

# in the paper's Listing 1 wording
DEFAULT_IDK_TEXT = "Don't know the correct answer"
