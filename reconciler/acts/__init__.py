"""The API's acts: what each route of ``/api/v1`` does, whichever door it came through."""
