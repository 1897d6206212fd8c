"""From git to change sets: polling the tracked branch and staging what changed."""
