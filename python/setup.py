"""Builds the C library with the repository's Makefile (only a C toolchain is needed) and ships
libptxgen.so inside the package, so an installed ptxgen needs no other files."""
import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


class BuildWithLibrary(build_py):
    def run(self):
        subprocess.check_call(["make", "-C", REPO, "build/libptxgen.so"])
        super().run()
        dest = os.path.join(self.build_lib, "ptxgen")
        os.makedirs(dest, exist_ok=True)
        shutil.copy(os.path.join(REPO, "build", "libptxgen.so"), os.path.join(dest, "libptxgen.so"))


setup(cmdclass={"build_py": BuildWithLibrary})
