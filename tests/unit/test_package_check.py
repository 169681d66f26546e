"""infra.package_check's verdicts (``make package`` runs the whole check on build/deployment.zip)."""

from __future__ import annotations

import zipfile

from chalice.constants import MISSING_DEPENDENCIES_TEMPLATE

from infra import package_check
from infra.threads import THREAD_ENV


def test_chalice_missing_dependency_warning_fails_the_package_naming_each_requirement():
    printed = "Creating deployment package.\n" + MISSING_DEPENDENCIES_TEMPLATE % "onnxruntime==1.16.3\nfoo==1.0"
    assert package_check.missing_dependencies(printed) == ["onnxruntime==1.16.3", "foo==1.0"]


def test_chalice_output_without_the_warning_passes():
    assert package_check.missing_dependencies("Creating deployment package.\n") == []


def test_a_function_without_the_thread_pins_is_named():
    def fn(env):
        return {"Type": "AWS::Serverless::Function", "Properties": {"Environment": {"Variables": env}}}

    sam = {"Resources": {"Api": fn({**THREAD_ENV, "CAIRN_STAGE": "dev"}),
                         "Worker": fn({k: v for k, v in THREAD_ENV.items() if k != "OMP_NUM_THREADS"}),
                         "Queue": {"Type": "AWS::SQS::Queue"}}}
    assert package_check.unpinned_functions(sam) == ["Worker"]


def test_sizes_are_the_zip_file_and_the_sum_of_its_members(tmp_path):
    path = tmp_path / "p.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("a.txt", "x" * 10_000)
        z.writestr("b/c.txt", "y" * 5)
    zipped, unzipped = package_check.sizes(path)
    assert unzipped == 10_005 and zipped == path.stat().st_size < 10_005


def test_vectors_off_the_reference_or_paths_outside_the_package_are_reported():
    ref = {"vectors": [[1.0, 0.0], [0.0, 1.0]], "min_cosine": 0.999}
    good = {"folder": "/tmp/pkg", "sys_path": ["/tmp/pkg", "/usr/lib/python311.zip"], "app": "/tmp/pkg/app.py",
            "model_dir": "/tmp/pkg/chalicelib/semantic/model", "available": True, "reason": None,
            "queries": [[1.0, 0.0], [0.0, 1.0]], "documents": [[1.0, 0.0], [0.0, 1.0]]}
    assert package_check.vector_problems(good, ref) == []
    bad = {**good, "sys_path": [*good["sys_path"], "/venv/lib/python3.11/site-packages"],
           "model_dir": "/elsewhere/model", "documents": [[1.0, 0.0], [0.6, 0.8]]}
    problems = package_check.vector_problems(bad, ref)
    assert len(problems) == 3
    assert "site-packages" in problems[0] and "model_dir" in problems[1] and problems[2].startswith("documents")
    missing = package_check.vector_problems({**good, "available": False, "reason": "FileNotFoundError: x"}, ref)
    assert missing == ["the packaged model did not load: FileNotFoundError: x"]
