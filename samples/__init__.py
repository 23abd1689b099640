"""The sample workflows, installed as the package ``flowdesk_samples`` (see pyproject.toml);
listed by ``engine.resources.sample_paths()``."""
