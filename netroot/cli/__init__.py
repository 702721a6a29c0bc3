"""The typer app: thin commands that parse, call a service and render."""
