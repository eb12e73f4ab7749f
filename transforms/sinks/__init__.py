"""Output writers: IM, LLaMA-Factory, stats, rejects, dead letters, manifests."""
