^core/src/server/event\.rs:124:5:\ replace\ fingerprint\ \->\ u64\ with\ 1$
^core/src/server/expiry\.rs:98:31:\ replace\ ==\ with\ !=\ in\ Server::promote$
^core/src/server/expiry\.rs:101:53:\ replace\ \+\ with\ \*\ in\ Server::promote$
^core/src/server/expiry\.rs:101:65:\ replace\ \+\ with\ \*\ in\ Server::promote$
^core/src/server/expiry\.rs:179:39:\ replace\ <\ with\ ==\ in\ Server::on_writer_wrote$
^core/src/server/expiry\.rs:179:39:\ replace\ <\ with\ >\ in\ Server::on_writer_wrote$
^core/src/server/expiry\.rs:179:39:\ replace\ <\ with\ <=\ in\ Server::on_writer_wrote$
^core/src/server/reads\.rs:64:9:\ replace\ PendingReads::take_confirmed_where\ \->\ Vec<ClientRequest>\ with\ vec!\[\]$
^core/src/server/requests\.rs:104:13:\ delete\ match\ arm\ Op::LeaseClaim\{ttl_ns,\ \.\.\}\ in\ Server::propose_request$
^core/src/server/requests\.rs:159:21:\ replace\ match\ guard\ self\.config\.bugs\.keepalive_after_revoke\ with\ true\ in\ Server::propose_refresh$
^core/src/service/invariants\.rs:19:9:\ replace\ StateMachine::check_invariants\ \->\ Result<\(\),\ String>\ with\ Ok\(\(\)\)$
^core/src/server/expiry\.rs:160:27:\ replace\ match\ guard\ self\.monotonic\(\)\ \|\|\ self\.measured\(lease\)\ with\ true\ in\ Server::on_lease_granted$
^core/src/server/expiry\.rs:267:118:\ replace\ \-\ with\ /\ in\ Server::propose_writer_expiries$
^core/src/server/expiry\.rs:334:70:\ replace\ \&\&\ with\ \|\|\ in\ Server::answer_keepalive$
