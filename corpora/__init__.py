"""Where text lives: collections, loaders, splitting and indexes."""
