"""What a run's config is: the settings every task's config shares (`RunConfig`), how its problems are
reported, where paths in it are read from, and where a run's folder may be."""
