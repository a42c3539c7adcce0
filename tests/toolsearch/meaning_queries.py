"""A small mixed toolset (helpdesk, payments, chat, calendar, code hosting, operations...) and requests worded
the way a person says them, not the way the descriptions do: "ticket" for issue, "money" for balance, "who
am I" for the current user. Written by hand for the hybrid search tests; HELD_OUT was written with the rest
and played no part in choosing the fusion's constants (bench/README.md says how they were chosen)."""

from __future__ import annotations

from apimcp.protocol.models import Tool

TOOLS: tuple[tuple[str, str, str], ...] = (
    ("issues_assign", "Assign an issue", "Sets the assignee of an issue to a user account."),
    ("issues_transition", "Transition an issue",
     "Performs a workflow transition on an issue, which changes its status (To Do, In Progress, Done)."),
    ("issues_create", "Create an issue", "Creates an issue in a project, with a summary and an issue type."),
    ("issues_comment", "Comment on an issue", "Adds a comment to an issue."),
    ("issues_search", "Search issues", "Searches for issues with a JQL expression."),
    ("issues_watch", "Watch an issue", "Adds a watcher to an issue: watchers hear of its changes."),
    ("issues_worklog", "Add a worklog", "Adds a worklog entry that records time spent working on an issue."),
    ("myself_get", "Current user", "Returns the details of the user whose credentials make the request."),
    ("users_deactivate", "Deactivate a user", "Deactivates a user account, which can no longer authenticate."),
    ("balance_get", "Retrieve balance", "The account's current balance: available and pending amounts per currency."),
    ("refunds_create", "Create a refund", "Refunds a charge, in whole or in part."),
    ("charges_list", "List charges", "Lists the charges made, most recent first."),
    ("subscriptions_cancel", "Cancel a subscription",
     "Cancels a customer's subscription, at once or at the end of the current period."),
    ("customers_update", "Update a customer", "Updates a customer's attributes: email, name, address, metadata."),
    ("payouts_create", "Create a payout",
     "Sends funds from the account's balance to its external bank account or debit card."),
    ("invoices_list", "List invoices", "Lists the invoices issued to customers."),
    ("messages_post", "Post a message", "Posts a message to a conversation (a public or private channel)."),
    ("conversations_list", "List conversations", "Lists the conversations of the workspace."),
    ("files_upload", "Upload a file", "Uploads a file and shares it in conversations."),
    ("events_create", "Create an event", "Creates an event on a calendar, with attendees, start and end times."),
    ("freebusy_query", "Query free/busy", "Returns the busy intervals of a set of calendars between two times."),
    ("forecast_get", "Forecast",
     "Forecast for a location: temperature, precipitation probability and wind for the coming days."),
    ("pulls_merge", "Merge a pull request", "Merges a pull request into its base branch."),
    ("repos_fork", "Fork a repository", "Creates a fork of a repository for the authenticated user."),
    ("releases_create", "Create a release", "Creates a release from a tag, with release notes."),
    ("dns_records_create", "Create a DNS record", "Creates a DNS record (A, AAAA, CNAME, MX, TXT) in a zone."),
    ("certificates_renew", "Renew a certificate", "Renews the TLS certificate of a domain."),
    ("backups_restore", "Restore a backup", "Restores a database instance from a backup snapshot."),
    ("passwords_reset", "Reset a password", "Sends a password reset email to a user."),
    ("texts_translate", "Translate text", "Translates text from a source language into a target language."),
    ("shipments_track", "Track a shipment", "Returns the tracking status and location history of a shipment."),
    ("mail_send", "Send an email", "Sends an email message to one or more recipients."),
)  # fmt: skip

QUERIES: tuple[tuple[str, str], ...] = (
    ("give the ticket to Alice", "issues_assign"),
    ("move the bug to done", "issues_transition"),
    ("who am I logged in as", "myself_get"),
    ("how much money do I have available", "balance_get"),
    ("give the customer their money back", "refunds_create"),
    ("stop billing this client every month", "subscriptions_cancel"),
    ("withdraw money to my bank", "payouts_create"),
    ("tell the team channel the deploy is finished", "messages_post"),
    ("will it rain tomorrow in Paris", "forecast_get"),
    ("block this employee from signing in", "users_deactivate"),
)
HELD_OUT: tuple[tuple[str, str], ...] = (
    ("note on the ticket that it's fixed", "issues_comment"),
    ("log the three hours I spent on the bug", "issues_worklog"),
    ("when is everyone free on Friday", "freebusy_query"),
    ("point my domain at the new server", "dns_records_create"),
    ("where is my package", "shipments_track"),
    ("put this text into Spanish", "texts_translate"),
    ("I forgot my password", "passwords_reset"),
)


def tools() -> list[Tool]:
    schema = {"type": "object", "properties": {"id": {"type": "string"}}}
    return [Tool(name=name, title=title, description=text, input_schema=schema) for name, title, text in TOOLS]
