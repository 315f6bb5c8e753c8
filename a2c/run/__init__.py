"""The run machinery: the task registry, loading a config for a task, stages and their reuse, the run folder
(files, store, lock), opening a made run, and the runner."""
