"""Build hook: ship the Streamlit front end and the presets inside the wheel.

The repository keeps ``app.py``, ``pages/`` and ``scenarios/`` at its top level (that is how
``streamlit run app.py`` and the tests use them). A wheel installs packages only, so ``build_py``
copies those files to ``specviz/_app/`` in the build; ``specviz.base.paths.app_root()`` looks there
first. Everything else is declared in pyproject.toml.
"""
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
APP_FILES = ["app.py"]
APP_DIRS = {"pages": "*.py", "scenarios": "**/*.json", "static": "*"}  # static/: what the app's server serves


class build_py_with_app(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install runs from the checkout, where app_root() is the repository
        dest = Path(self.build_lib) / "specviz" / "_app"
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        for name in APP_FILES:
            shutil.copy2(HERE / name, dest / name)
        for folder, pattern in APP_DIRS.items():
            for src in sorted((HERE / folder).glob(pattern)):
                if "__pycache__" in src.parts:
                    continue
                target = dest / src.relative_to(HERE)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, target)


setup(cmdclass={"build_py": build_py_with_app})
