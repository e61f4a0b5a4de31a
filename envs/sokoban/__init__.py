"""JAX-native Sokoban: env, level formats, reverse-play generator, BFS solver, text view."""
