#!/usr/bin/python3
"""validate.py passes the manifests in this directory and refuses broken copies of them.

Each broken copy changes one thing in the real manifests, the kind of mistake
an edit makes; validate.py must name it.
"""
import copy
import glob
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import validate  # noqa: E402

MANIFESTS = sorted(p for p in glob.glob(os.path.join(HERE, "*.yaml")) if not p.endswith("kustomization.yaml"))


def find(documents, kind):
    for _, _, doc in documents:
        if doc["kind"] == kind:
            return doc
    raise KeyError(kind)


class ValidateTest(unittest.TestCase):
    def setUp(self):
        self.documents = validate.load(MANIFESTS)

    def broken(self, change):
        documents = copy.deepcopy(self.documents)
        change(documents)
        return "\n".join(validate.validate(documents))

    def test_the_manifests_are_valid(self):
        kinds = sorted(doc["kind"] for _, _, doc in self.documents)
        self.assertEqual(kinds, ["ConfigMap", "CronJob", "DaemonSet", "Namespace", "PersistentVolumeClaim", "Pod",
                                 "PodDisruptionBudget", "Service", "StatefulSet"])
        self.assertEqual(validate.validate(self.documents), [])

    def test_the_kustomization_applies_every_manifest(self):
        with open(os.path.join(HERE, "kustomization.yaml"), encoding="utf-8") as f:
            resources = validate.yaml.safe_load(f)["resources"]
        # restore-pod.yaml is applied by hand, once per replica, to restore a backup.
        applied_by_hand = {"restore-pod.yaml"}
        self.assertEqual(sorted(resources),
                         sorted(os.path.basename(p) for p in MANIFESTS if os.path.basename(p) not in applied_by_hand))

    def test_an_unknown_field_is_refused(self):
        def change(d):
            find(d, "StatefulSet")["spec"]["template"]["spec"]["containers"][0]["readinessprobe"] = {}
        self.assertIn("containers[0].readinessprobe: unknown field (not in V1Container)", self.broken(change))

    def test_a_wrong_type_is_refused(self):
        def change(d):
            find(d, "StatefulSet")["spec"]["replicas"] = "3"
        self.assertIn("spec.replicas: expected an integer, got str '3'", self.broken(change))

    def test_a_missing_required_field_is_refused(self):
        def change(d):
            del find(d, "DaemonSet")["spec"]["template"]["spec"]["containers"][0]["name"]
        self.assertIn("containers[0].name: required field missing", self.broken(change))

    def test_a_wrong_api_version_is_refused(self):
        def change(d):
            find(d, "PodDisruptionBudget")["apiVersion"] = "policy/v1beta2"
        self.assertIn("apiVersion 'policy/v1beta2' kind 'PodDisruptionBudget' is not a kind", self.broken(change))

    def test_a_bad_enumeration_is_refused(self):
        def change(d):
            find(d, "StatefulSet")["spec"]["podManagementPolicy"] = "parallel"
        self.assertIn("podManagementPolicy: 'parallel' is not one of", self.broken(change))

    def test_a_selector_that_misses_the_template_is_refused(self):
        def change(d):
            find(d, "DaemonSet")["spec"]["selector"]["matchLabels"]["app.kubernetes.io/name"] = "worker"
        self.assertIn("does not match the pod template's labels", self.broken(change))

    def test_the_headless_service_must_publish_replicas_before_they_are_ready(self):
        def change(d):
            del find(d, "Service")["spec"]["publishNotReadyAddresses"]
        self.assertIn("must set publishNotReadyAddresses: true", self.broken(change))

        def not_headless(d):
            del find(d, "Service")["spec"]["clusterIP"]
        self.assertIn("must be headless", self.broken(not_headless))

    def test_a_probe_on_a_port_the_container_lacks_is_refused(self):
        def change(d):
            find(d, "StatefulSet")["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["httpGet"]["port"] = "metrics"
        self.assertIn("readinessProbe port 'metrics' is not one of its ports", self.broken(change))

    def test_a_config_map_no_file_defines_is_refused(self):
        def change(d):
            find(d, "ConfigMap")["metadata"]["name"] = "gpool-scheduler-config"
        self.assertIn("names ConfigMap gpool-scheduler, which no file defines", self.broken(change))

    def test_a_file_that_is_not_yaml_fails_the_command(self):
        path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"gpool-validate-{os.getpid()}.yaml")
        with open(path, "w", encoding="utf-8") as f:
            f.write("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x\n")
        try:
            self.assertEqual(validate.main([path]), 1)
        finally:
            os.unlink(path)


if __name__ == "__main__":
    unittest.main()
