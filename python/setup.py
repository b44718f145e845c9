# The coop Python package (docs/python.md). A plain setup.py, without a
# pyproject.toml: pip then builds with the installed setuptools and wheel
# (Debian 12: python3-setuptools, python3-wheel) instead of fetching them
# into an isolated build environment, so `pip install ./python` works
# offline. libcoop.so.0 itself comes from coop's own install.
from setuptools import setup

setup(
    name="coop",
    version="0.1.0",
    description="Python bindings of libcoop, the client library of coopd",
    packages=["coop"],
    python_requires=">=3.9",
    install_requires=["numpy"],
)
