"""Only the package list, which pyproject.toml cannot express: every package found under
engine/ and editor/ (so new ones are never left out of a wheel), plus resources/ and
samples/ installed as flowdesk_resources and flowdesk_samples (mapped in pyproject.toml)."""

from setuptools import find_packages, setup

setup(
    packages=find_packages(include=["engine", "engine.*", "editor", "editor.*"])
    + ["flowdesk_resources", "flowdesk_samples"]
)
