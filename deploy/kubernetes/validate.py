#!/usr/bin/python3
"""Validates Kubernetes manifests offline, strictly, against the API types.

    validate.py FILE.yaml...     prints one line per problem; exit 0 when none, 1 otherwise

The schema is the Kubernetes API's own, as Debian's python3-kubernetes (the
official Python client, generated from the API's OpenAPI spec) carries it in
its model classes: each class's `openapi_types` gives the fields and their
types, `attribute_map` their JSON names, and a setter that refuses None marks
a required field. On top of what the types say, it checks:
  - every field is known (a typo is an error, as `kubectl apply --validate=strict` makes it);
  - every apiVersion/kind pair is one these manifests use (KINDS);
  - a few enumerations the client does not check (ENUMS);
  - names are DNS labels, a workload's selector matches its pod template's
    labels, a StatefulSet's serviceName is a headless Service in the same
    files that publishes not-ready addresses (its replicas find each other by
    those DNS names before any is ready), probes name a port the container
    has, and a volume's ConfigMap is one of the files'.
No cluster, no network: it runs in ctest.
"""
import re
import sys

import yaml
from kubernetes import client
from kubernetes.client import models

# The kinds these manifests use, by apiVersion and kind: the client's classes
# carry the version in their name but not the group, so the pair is checked here.
KINDS = {
    ("v1", "Namespace"): "V1Namespace",
    ("v1", "Service"): "V1Service",
    ("v1", "ConfigMap"): "V1ConfigMap",
    ("v1", "Secret"): "V1Secret",
    ("v1", "ServiceAccount"): "V1ServiceAccount",
    ("apps/v1", "StatefulSet"): "V1StatefulSet",
    ("apps/v1", "DaemonSet"): "V1DaemonSet",
    ("policy/v1", "PodDisruptionBudget"): "V1PodDisruptionBudget",
    ("v1", "PersistentVolumeClaim"): "V1PersistentVolumeClaim",
    ("batch/v1", "CronJob"): "V1CronJob",
    ("v1", "Pod"): "V1Pod",
}

# (class, field): allowed values, where the API enumerates them.
ENUMS = {
    ("V1ServiceSpec", "type"): {"ClusterIP", "NodePort", "LoadBalancer", "ExternalName"},
    ("V1StatefulSetSpec", "pod_management_policy"): {"OrderedReady", "Parallel"},
    ("V1StatefulSetUpdateStrategy", "type"): {"RollingUpdate", "OnDelete"},
    ("V1DaemonSetUpdateStrategy", "type"): {"RollingUpdate", "OnDelete"},
    ("V1PodSpec", "restart_policy"): {"Always", "OnFailure", "Never"},
    ("V1CronJobSpec", "concurrency_policy"): {"Allow", "Forbid", "Replace"},
    ("V1PodSpec", "dns_policy"): {"ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"},
    ("V1Container", "image_pull_policy"): {"Always", "IfNotPresent", "Never"},
    ("V1ContainerPort", "protocol"): {"TCP", "UDP", "SCTP"},
    ("V1ServicePort", "protocol"): {"TCP", "UDP", "SCTP"},
    ("V1HostPathVolumeSource", "type"): {"", "DirectoryOrCreate", "Directory", "FileOrCreate", "File",
                                          "Socket", "CharDevice", "BlockDevice"},
    ("V1Toleration", "operator"): {"Exists", "Equal"},
    ("V1Toleration", "effect"): {"", "NoSchedule", "PreferNoSchedule", "NoExecute"},
    ("V1HTTPGetAction", "scheme"): {"HTTP", "HTTPS"},
    ("V1PersistentVolumeClaimSpec", "volume_mode"): {"Filesystem", "Block"},
}

# Quantities (resources) are strings in the API but written as numbers too.
QUANTITY_MAPS = {("V1ResourceRequirements", "limits"), ("V1ResourceRequirements", "requests"),
                 ("V1PersistentVolumeClaimSpec", "resources")}

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_CONFIG = client.Configuration()
_CONFIG.client_side_validation = True
_REQUIRED = {}


def required_fields(cls):
    """The attributes whose setter refuses None: the API's required fields."""
    if cls not in _REQUIRED:
        probe = cls.__new__(cls)
        probe.local_vars_configuration = _CONFIG
        found = set()
        for attr in cls.openapi_types:
            try:
                setattr(probe, attr, None)
            except ValueError:
                found.add(attr)
        _REQUIRED[cls] = found
    return _REQUIRED[cls]


def check_value(value, type_name, path, owner, errors, quantity=False):
    """Checks `value` against a client type name ('str', 'list[V1Foo]', ...)."""
    if value is None:
        return
    if type_name.startswith("list["):
        if not isinstance(value, list):
            errors.append(f"{path}: expected a list, got {type(value).__name__}")
            return
        for i, item in enumerate(value):
            check_value(item, type_name[5:-1], f"{path}[{i}]", owner, errors)
        return
    if type_name.startswith("dict("):
        if not isinstance(value, dict):
            errors.append(f"{path}: expected a map, got {type(value).__name__}")
            return
        inner = type_name[type_name.index(",") + 1:-1].strip()
        for key, item in value.items():
            if not isinstance(key, str):
                errors.append(f"{path}: key {key!r} is not a string")
            check_value(item, inner, f"{path}.{key}", owner, errors, quantity)
        return
    if type_name == "str":
        if quantity and isinstance(value, (int, float)) and not isinstance(value, bool):
            return
        if not isinstance(value, str):
            errors.append(f"{path}: expected a string, got {type(value).__name__} {value!r}")
        return
    if type_name == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            errors.append(f"{path}: expected an integer, got {type(value).__name__} {value!r}")
        return
    if type_name == "bool":
        if not isinstance(value, bool):
            errors.append(f"{path}: expected true or false, got {type(value).__name__} {value!r}")
        return
    if type_name == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            errors.append(f"{path}: expected a number, got {value!r}")
        return
    if type_name in ("object", "datetime", "date"):
        return  # int-or-string, free-form
    cls = getattr(models, type_name, None)
    if cls is None:
        errors.append(f"{path}: the client knows no type {type_name}")
        return
    check_object(value, cls, path, errors)


def check_object(value, cls, path, errors):
    if not isinstance(value, dict):
        errors.append(f"{path}: expected an object ({cls.__name__}), got {type(value).__name__}")
        return
    by_json = {json_name: attr for attr, json_name in cls.attribute_map.items()}
    for key in value:
        if key not in by_json:
            errors.append(f"{path}.{key}: unknown field (not in {cls.__name__})")
    for attr in required_fields(cls):
        if value.get(cls.attribute_map[attr]) is None:
            errors.append(f"{path}.{cls.attribute_map[attr]}: required field missing")
    for key, item in value.items():
        attr = by_json.get(key)
        if attr is None:
            continue
        allowed = ENUMS.get((cls.__name__, attr))
        if allowed is not None and item is not None and item not in allowed:
            errors.append(f"{path}.{key}: {item!r} is not one of {sorted(allowed)}")
        check_value(item, cls.openapi_types[attr], f"{path}.{key}", cls, errors,
                    quantity=(cls.__name__, attr) in QUANTITY_MAPS)


def pod_template_checks(doc, where, config_maps, errors):
    spec = doc.get("spec") or {}
    template = spec.get("template") or {}
    labels = (template.get("metadata") or {}).get("labels") or {}
    selector = (spec.get("selector") or {}).get("matchLabels") or {}
    for key, val in selector.items():
        if labels.get(key) != val:
            errors.append(f"{where}: spec.selector.matchLabels {key}={val} does not match the pod template's labels")
    pod = template.get("spec") or {}
    for volume in pod.get("volumes") or []:
        cm = (volume.get("configMap") or {}).get("name")
        if cm is not None and cm not in config_maps:
            errors.append(f"{where}: volume {volume.get('name')} names ConfigMap {cm}, which no file defines")
    for c in (pod.get("containers") or []) + (pod.get("initContainers") or []):
        ports = {p.get("name") for p in c.get("ports") or []} | {p.get("containerPort") for p in c.get("ports") or []}
        for probe_name in ("livenessProbe", "readinessProbe", "startupProbe"):
            probe = c.get(probe_name) or {}
            port = (probe.get("httpGet") or probe.get("tcpSocket") or {}).get("port")
            if port is not None and port not in ports:
                errors.append(f"{where}: container {c.get('name')} {probe_name} port {port!r} is not one of its ports")


def validate(documents):
    """documents: (file, index, parsed document) triples. Returns the problems found."""
    errors = []
    services = {}
    config_maps = set()
    for _, _, doc in documents:
        if isinstance(doc, dict) and doc.get("kind") == "Service":
            services[(doc.get("metadata") or {}).get("name")] = doc
        if isinstance(doc, dict) and doc.get("kind") == "ConfigMap":
            config_maps.add((doc.get("metadata") or {}).get("name"))
    for name, index, doc in documents:
        where = f"{name}#{index}"
        if not isinstance(doc, dict):
            errors.append(f"{where}: not a mapping")
            continue
        class_name = KINDS.get((doc.get("apiVersion"), doc.get("kind")))
        if class_name is None:
            errors.append(f"{where}: apiVersion {doc.get('apiVersion')!r} kind {doc.get('kind')!r} is not a kind "
                          f"these manifests use ({sorted(KINDS)})")
            continue
        where = f"{where} {doc['kind']}/{(doc.get('metadata') or {}).get('name')}"
        check_object(doc, getattr(models, class_name), where, errors)
        meta_name = (doc.get("metadata") or {}).get("name")
        if not isinstance(meta_name, str) or not DNS_LABEL.match(meta_name):
            errors.append(f"{where}: metadata.name {meta_name!r} is not a DNS label")
        if doc["kind"] in ("StatefulSet", "DaemonSet"):
            pod_template_checks(doc, where, config_maps, errors)
        if doc["kind"] == "StatefulSet":
            service_name = (doc.get("spec") or {}).get("serviceName")
            service = services.get(service_name)
            if service is None:
                errors.append(f"{where}: spec.serviceName {service_name!r} is no Service in these files")
            else:
                svc = service.get("spec") or {}
                if svc.get("clusterIP") != "None":
                    errors.append(f"{where}: Service {service_name} must be headless (clusterIP: None)")
                if svc.get("publishNotReadyAddresses") is not True:
                    errors.append(f"{where}: Service {service_name} must set publishNotReadyAddresses: true, or "
                                  "replicas that are not ready yet cannot find each other to elect a leader")
    return errors


def load(paths):
    documents = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for index, doc in enumerate(yaml.safe_load_all(f)):
                if doc is not None:
                    documents.append((path, index, doc))
    return documents


def main(argv):
    if not argv:
        print("usage: validate.py FILE.yaml...", file=sys.stderr)
        return 2
    try:
        documents = load(argv)
    except (OSError, yaml.YAMLError) as e:
        print(f"error: {e}")
        return 1
    errors = validate(documents)
    for e in errors:
        print(f"error: {e}")
    print(f"{len(documents)} documents in {len(argv)} files, {len(errors)} problems")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
