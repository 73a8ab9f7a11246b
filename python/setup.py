"""pip install ./python: the parallax helper package (pure Python).

A setup.py without a pyproject.toml so that pip installs it offline, without
fetching a build backend. It needs torch and onnx at run time; on Debian use
/usr/bin/python3 (python3-torch, python3-onnx), or a virtual environment made
with --system-site-packages.
"""
import re
import os

from setuptools import setup

here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "parallax", "__init__.py")) as f:
    version = re.search(r'^__version__ = "([^"]+)"', f.read(), re.M).group(1)

setup(
    name="parallax",
    version=version,
    description="Export PyTorch modules for Parallax, load trained weights back, read runs",
    packages=["parallax"],
    python_requires=">=3.9",
)
