"""Binder (repo2docker): environment.yml brings the dependencies, postBuild the course, its
kernel and trusted notebooks. The test runs postBuild in a fresh environment that holds only
the dependencies, as repo2docker's conda step leaves it."""

import json
import os
import subprocess
import sys
import sysconfig
import venv

import pytest
from helpers import ROOT


@pytest.mark.skipif(os.name != "posix", reason="postBuild is a bash script")
def test_post_build_installs_the_course_and_its_kernel_in_a_fresh_environment(tmp_path):
    env_dir = tmp_path / "binder-env"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    # the dependencies, as conda would have installed them: this environment's packages,
    # visible through a .pth file, without the course itself
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()"
                           "['purelib'])"], capture_output=True, text=True,
                          check=True).stdout.strip()
    with open(os.path.join(site, "binder_deps.pth"), "w") as handle:
        handle.write(sysconfig.get_paths()["purelib"] + "\n")
    # ... and their commands (jupyter-trust), as conda puts them in the environment's bin/
    scripts = sysconfig.get_paths()["scripts"]
    env = {**os.environ, "PATH": f"{env_dir / 'bin'}:{scripts}:{os.environ['PATH']}",
           "JUPYTER_DATA_DIR": str(tmp_path / "jupyter-data"), "HOME": str(tmp_path)}
    env.pop("JUPYTER_PATH", None)
    done = subprocess.run(["bash", str(ROOT / "postBuild")], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    listing = ("import json; from jupyter_client.kernelspec import KernelSpecManager; "
               "print(json.dumps({k: v['spec']['argv'][0] for k, v in "
               "KernelSpecManager().get_all_specs().items()}))")
    specs = json.loads(subprocess.run([python, "-c", listing], env=env, capture_output=True,
                                      text=True, check=True).stdout)
    assert specs.get("bahdanau-day10") == str(python)  # the kernel runs this environment
    where = subprocess.run([python, "-c", "import course_utils, course_utils.checks; "
                            "print(course_utils.__file__)"], env=env, capture_output=True,
                           text=True, check=True).stdout.strip()
    assert where == str(ROOT / "course_utils" / "__init__.py")
    assert sys.executable  # the test's own Python is untouched
