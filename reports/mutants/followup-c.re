^core/src/raft/progress\.rs:58:56:\ replace\ match\ guard\ self\.match_index\ >=\ snap\ with\ false\ in\ Progress::on_ack$
^core/src/raft/progress\.rs:58:73:\ replace\ >=\ with\ <\ in\ Progress::on_ack$
^core/src/raft/election\.rs:146:58:\ replace\ >\ with\ >=\ in\ RaftNode<C,\ S>::handle_request_vote$
