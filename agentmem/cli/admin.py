"""Commands for keeping a library healthy: check, backup, restore."""
