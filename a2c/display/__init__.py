"""Building blocks of what people read: report tables, number formats and figures, and what a task hands the
run viewer."""
