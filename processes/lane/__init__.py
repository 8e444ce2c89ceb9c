"""The lane: every lifecycle call and every turn of one process runs serially."""
