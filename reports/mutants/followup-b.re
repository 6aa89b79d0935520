^core/src/client/session\.rs:89:9:\ replace\ Session::cancel\ with\ \(\)$
^core/src/client/session\.rs:182:64:\ replace\ ==\ with\ !=\ in\ Session::advance_cursor_past$
^core/src/client/session\.rs:183:37:\ replace\ \+\ with\ \*\ in\ Session::advance_cursor_past$
^core/src/client/session\.rs:185:40:\ replace\ \+\ with\ \*\ in\ Session::advance_cursor_past$
^core/src/client/session\.rs:185:45:\ replace\ %\ with\ /\ in\ Session::advance_cursor_past$
^core/src/raft/log\.rs:165:18:\ replace\ \&\&\ with\ \|\|\ in\ RaftLog<C>::ends_consistent$
^core/src/raft/node\.rs:339:17:\ delete\ match\ arm\ Message::InstallSnapshot\{\.\.\}\ in\ RaftNode<C,\ S>::check_term$
^core/src/raft/node\.rs:340:17:\ delete\ match\ arm\ Message::RequestVote\{pre_vote,\ \.\.\}\ in\ RaftNode<C,\ S>::check_term$
