^core/src/server/expiry\.rs:150:9: replace Server::on_lease_granted with \(\)$
^core/src/service/state_machine\.rs:310:9: replace StateMachine::put \-> Response with Default::default\(\)$
^core/src/server/requests\.rs:94:28: replace < with == in Server::propose_request$
^core/src/server/output\.rs:32:49: replace == with != in ServerOutput::replies_to$
^core/src/raft/replication\.rs:34:71: replace < with > in RaftNode<C, S>::flush_appends$
^core/src/server/process\.rs:269:9: replace Server::serve_reads with \(\)$
^core/src/client/belief\.rs:53:33: replace \+ with \* in Belief::acknowledge$
^core/src/server/process\.rs:103:9: replace Server::next_deadline_ns \-> u64 with 0$
^core/src/server/expiry\.rs:171:39: replace < with > in Server::on_writer_wrote$
^core/src/raft/election\.rs:172:13: replace \|\| with \&\& in RaftNode<C, S>::handle_request_vote$
^core/src/server/output\.rs:27:61: replace \&\& with \|\| in ServerOutput::is_empty$
^core/src/service/state_machine\.rs:331:47: delete ! in StateMachine::cas$
^core/src/raft/election\.rs:99:58: replace \+ with \* in RaftNode<C, S>::in_vote_lease$
^core/src/service/invariants\.rs:63:41: replace \&\& with \|\| in StateMachine::check_locks$
^core/src/server/process\.rs:81:9: replace Server::tick with \(\)$
^core/src/raft/node\.rs:470:31: replace \+ with \- in RaftNode<C, S>::quorum$
^core/src/raft/snapshot\.rs:84:38: replace > with == in RaftNode<C, S>::handle_install_snapshot$
^core/src/raft/read_index\.rs:91:32: replace match guard read\.round <= confirmed_round with true in RaftNode<C, S>::advance_reads$
^core/src/raft/replication\.rs:38:20: delete ! in RaftNode<C, S>::flush_appends$
^core/src/service/state_machine\.rs:425:9: replace StateMachine::acquire \-> Option<Response> with None$
^core/src/service/state_machine\.rs:126:9: replace StateMachine::apply_entry \-> Vec<Effect> with vec!\[Default::default\(\)\]$
^core/src/server/expiry\.rs:238:9: replace Server::propose_writer_expiries with \(\)$
^core/src/server/output\.rs:32:9: replace ServerOutput::replies_to \-> Vec<\&ClientResponse> with vec!\[\]$
^core/src/server/output\.rs:27:33: replace \&\& with \|\| in ServerOutput::is_empty$
^core/src/server/expiry\.rs:155:47: replace < with <= in Server::on_lease_granted$
^core/src/server/requests\.rs:86:13: delete match arm Op::LeaseClaim\{ttl_ns, \.\.\} in Server::propose_request$
^core/src/client/session\.rs:166:9: replace Session::next_deadline_ns \-> Option<u64> with Some\(1\)$
^core/src/server/process\.rs:67:9: replace Server::handle_peer with \(\)$
^core/src/raft/membership\.rs:51:93: replace == with != in RaftNode<C, S>::propose_conf_change_inner$
^core/src/raft/progress\.rs:54:30: replace > with < in Progress::on_ack$
^core/src/service/kv\.rs:49:9: replace Kv::is_empty \-> bool with false$
^core/src/server/deadlines\.rs:46:9: replace LeaseDeadlines::pop_due \-> Vec<LeaseId> with vec!\[Default::default\(\)\]$
^core/src/raft/node\.rs:324:21: replace > with >= in RaftNode<C, S>::check_term$
^core/src/client/belief\.rs:67:53: replace < with == in Belief::holds$
^core/src/raft/membership\.rs:92:48: replace \+ with \* in RaftNode<C, S>::sync_progress_with_voters$
^core/src/raft/election\.rs:55:24: replace < with == in RaftNode<C, S>::tick_leader$
^core/src/raft/election\.rs:99:54: replace < with <= in RaftNode<C, S>::in_vote_lease$
^core/src/raft/election\.rs:244:28: replace > with == in RaftNode<C, S>::tally$
^core/src/server/deadlines\.rs:29:9: replace LeaseDeadlines::disarm \-> Option<u64> with None$
^core/src/raft/election\.rs:232:9: replace RaftNode<C, S>::tally \-> Tally with Default::default\(\)$
^core/src/raft/replication\.rs:22:9: replace RaftNode<C, S>::flush_appends with \(\)$
^core/src/raft/log\.rs:162:80: replace == with != in RaftLog<C>::first_index_of_term_at$
^core/src/raft/node\.rs:324:21: replace > with < in RaftNode<C, S>::check_term$
^core/src/server/process\.rs:111:9: replace Server::state_machine \-> \&StateMachine with Box::leak\(Box::new\(Default::default\(\)\)\)$
^core/src/raft/election\.rs:213:47: replace \+ with \* in RaftNode<C, S>::handle_vote_response$
^core/src/raft/election\.rs:70:9: replace RaftNode<C, S>::quorum_recently_active \-> bool with true$
^core/src/raft/progress\.rs:65:73: replace >= with < in Progress::on_ack$
^core/src/raft/types\.rs:242:13: replace \&\& with \|\| in Ready<C, S>::is_empty$
^core/src/service/state_machine\.rs:371:28: replace != with == in StateMachine::grant_lease$
^core/src/raft/replication\.rs:337:47: replace \- with / in RaftNode<C, S>::maybe_commit$
^core/src/raft/election\.rs:177:37: replace \|\| with \&\& in RaftNode<C, S>::handle_request_vote$
^core/src/raft/node\.rs:536:36: replace == with != in RaftNode<C, S>::become_follower$
^core/src/raft/node\.rs:273:9: replace RaftNode<C, S>::entry \-> Option<\&Entry<C>> with None$
^core/src/server/process\.rs:201:9: replace Server::install with \(\)$
^core/src/server/requests\.rs:21:9: replace Server::on_request with \(\)$
^core/src/server/requests\.rs:97:62: replace \&\& with \|\| in Server::propose_request$
^core/src/raft/log\.rs:85:9: replace RaftLog<C>::get \-> Option<\&Entry<C>> with Some\(Box::leak\(Box::new\(Entry::new\(Default::default\(\)\)\)\)\)$
^core/src/server/reads\.rs:53:30: replace > with < in PendingReads::take_servable$
^core/src/client/session\.rs:193:37: replace \+ with \- in Session::advance_cursor_past$
^core/src/server/output\.rs:27:9: replace ServerOutput::is_empty \-> bool with true$
^core/src/service/state_machine\.rs:367:33: replace \&\& with \|\| in StateMachine::grant_lease$
^core/src/client/belief\.rs:52:48: replace \- with / in Belief::acknowledge$
^core/src/raft/node\.rs:273:9: replace RaftNode<C, S>::entry \-> Option<\&Entry<C>> with Some\(Box::leak\(Box::new\(Entry::from\(Default::default\(\)\)\)\)\)$
^core/src/raft/membership\.rs:65:9: replace RaftNode<C, S>::recompute_voters with \(\)$
^core/src/service/writer_clock\.rs:45:9: replace WriterClocks::acked_ns \-> u64 with 1$
^core/src/raft/replication\.rs:92:52: replace \- with \+ in RaftNode<C, S>::send_heartbeat$
^core/src/server/expiry\.rs:97:53: replace \+ with \* in Server::promote$
^core/src/raft/replication\.rs:166:48: replace \+ with \- in RaftNode<C, S>::handle_append_entries$
^core/src/raft/node\.rs:232:9: replace RaftNode<C, S>::id \-> NodeId with Default::default\(\)$
^core/src/server/expiry\.rs:308:46: replace \|\| with \&\& in Server::answer_keepalive$
^core/src/server/expiry\.rs:171:39: replace < with == in Server::on_writer_wrote$
^core/src/server/expiry\.rs:105:93: replace \+ with \* in Server::promote$
^core/src/raft/replication\.rs:140:40: replace \|\| with \&\& in RaftNode<C, S>::handle_append_entries$
^core/src/raft/replication\.rs:338:22: replace <= with > in RaftNode<C, S>::maybe_commit$
^core/src/server/requests\.rs:121:21: replace match guard self\.config\.bugs\.keepalive_after_revoke with true in Server::propose_refresh$
^core/src/client/belief\.rs:42:9: replace Belief::acknowledge \-> u64 with 0$
^core/src/raft/election\.rs:50:9: replace RaftNode<C, S>::may_campaign \-> bool with false$
^core/src/raft/election\.rs:58:50: replace \+ with \* in RaftNode<C, S>::tick_leader$
^core/src/service/lock\.rs:69:9: replace Locks::iter \-> impl Iterator<Item =\(\&String, \&LockQueue\)> with ::std::iter::once\(\(Box::leak\(Box::new\(String::new\(\)\)\), Box::leak\(Box::new\(Default::default\(\)\)\)\)\)$
^core/src/raft/election\.rs:27:24: replace < with == in RaftNode<C, S>::tick_election$
^core/src/service/lock\.rs:65:9: replace Locks::holder \-> Option<\&Holder> with None$
^core/src/raft/log\.rs:177:30: replace < with > in RaftLog<C>::last_index_of_term$
^core/src/service/state_machine\.rs:273:58: replace match guard writer_clock with false in StateMachine::execute$
^core/src/client/session\.rs:195:45: replace % with / in Session::advance_cursor_past$
^core/src/raft/election\.rs:70:9: replace RaftNode<C, S>::quorum_recently_active \-> bool with false$
^core/src/raft/node\.rs:150:55: replace \&\& with \|\| in RaftNode<C, S>::step$
^core/src/raft/progress\.rs:65:56: replace match guard self\.match_index >= snap with false in Progress::on_ack$
^core/src/raft/node\.rs:286:35: replace \&\& with \|\| in RaftNode<C, S>::has_committed_in_term$
^core/src/raft/election\.rs:27:24: replace < with > in RaftNode<C, S>::tick_election$
^core/src/service/session\.rs:78:9: replace Sessions::len \-> usize with 1$
^core/src/raft/read_index\.rs:91:32: replace match guard read\.round <= confirmed_round with false in RaftNode<C, S>::advance_reads$
^core/src/client/session\.rs:175:9: replace Session::resend with \(\)$
^core/src/raft/snapshot\.rs:84:38: replace > with >= in RaftNode<C, S>::handle_install_snapshot$
^core/src/raft/election\.rs:211:9: replace RaftNode<C, S>::handle_vote_response with \(\)$
^core/src/raft/election\.rs:215:46: replace == with != in RaftNode<C, S>::handle_vote_response$
^core/src/service/kv\.rs:45:9: replace Kv::len \-> usize with 1$
^core/src/raft/node\.rs:241:9: replace RaftNode<C, S>::leader_id \-> Option<NodeId> with Some\(Default::default\(\)\)$
^core/src/service/session\.rs:114:9: replace Sessions::record with \(\)$
^core/src/service/invariants\.rs:66:40: replace <= with > in StateMachine::check_locks$
^core/src/service/session\.rs:126:50: replace \|\| with \&\& in Sessions::record$
^core/src/raft/snapshot\.rs:15:26: replace <= with > in RaftNode<C, S>::compact_inner$
^core/src/server/requests\.rs:35:13: delete match arm \(Op::LeaseKeepAlive\{\.\.\}, ExpiryStrategy::LeaderMonotonic\) in Server::on_request$
^core/src/raft/log\.rs:138:28: replace \- with / in RaftLog<C>::compact_to$
^core/src/raft/election\.rs:254:9: replace RaftNode<C, S>::become_leader with \(\)$
^core/src/raft/replication\.rs:182:45: replace \+ with \* in RaftNode<C, S>::handle_append_entries$
^core/src/raft/node\.rs:163:22: replace == with != in RaftNode<C, S>::tick$
^core/src/raft/progress\.rs:72:64: replace \+ with \* in Progress::on_ack$
^core/src/service/state_machine\.rs:450:71: replace == with != in StateMachine::release$
^core/src/service/lease\.rs:67:9: replace Leases::iter \-> impl Iterator<Item =\&Lease> with ::std::iter::once\(Box::leak\(Box::new\(Default::default\(\)\)\)\)$
^core/src/server/process\.rs:145:9: replace Server::reply with \(\)$
^core/src/server/config\.rs:72:9: replace ServerConfig::machine_settings \-> MachineSettings with Default::default\(\)$
^core/src/raft/log\.rs:85:9: replace RaftLog<C>::get \-> Option<\&Entry<C>> with None$
^core/src/service/state_machine\.rs:367:28: replace != with == in StateMachine::grant_lease$
^core/src/raft/progress\.rs:60:54: replace \+ with \- in Progress::on_ack$
^core/src/server/expiry\.rs:167:9: replace Server::on_writer_wrote with \(\)$
^core/src/raft/read_index\.rs:105:9: replace RaftNode<C, S>::fail_reads with \(\)$
^core/src/service/state_machine\.rs:287:20: delete ! in StateMachine::execute$
^core/src/service/session\.rs:78:9: replace Sessions::len \-> usize with 0$
^core/src/raft/election\.rs:144:28: replace != with == in RaftNode<C, S>::request_votes$
^core/src/client/session\.rs:88:33: replace \+ with \* in Session::submit$
^core/src/raft/snapshot\.rs:83:41: replace != with == in RaftNode<C, S>::handle_install_snapshot$
^core/src/server/process\.rs:177:9: replace Server::handle_ready with \(\)$
^core/src/raft/log\.rs:194:37: replace == with != in RaftLog<C>::ends_consistent$
^core/src/server/reads\.rs:64:9: replace PendingReads::take_confirmed_where \-> Vec<ClientRequest> with vec!\[\]$
^core/src/raft/election\.rs:178:21: replace \&\& with \|\| in RaftNode<C, S>::handle_request_vote$
^core/src/service/state_machine\.rs:136:9: replace StateMachine::apply \-> Vec<Effect> with vec!\[\]$
^core/src/service/state_machine\.rs:255:53: replace match guard self\.locks\.holder\(\&key\)\.map\(\|h\| h\.token\) != Some\(token\) with true in StateMachine::revalidate$
^core/src/service/command\.rs:55:9: replace Op::is_logged \-> bool with true$
^core/src/raft/log\.rs:163:19: replace \-= with \+= in RaftLog<C>::first_index_of_term_at$
^core/src/server/deadlines\.rs:40:9: replace LeaseDeadlines::next \-> Option<u64> with None$
^core/src/server/expiry\.rs:103:53: replace \+ with \* in Server::promote$
^core/src/client/belief\.rs:52:41: replace \* with / in Belief::acknowledge$
^core/src/service/invariants\.rs:57:20: delete ! in StateMachine::check_locks$
^core/src/client/belief\.rs:71:9: replace Belief::until_ns \-> Option<u64> with None$
^core/src/server/expiry\.rs:97:65: replace \+ with \* in Server::promote$
^core/src/raft/log\.rs:77:9: replace RaftLog<C>::term_at \-> Option<Term> with None$
^core/src/raft/log\.rs:66:29: replace \+ with \* in RaftLog<C>::last_index$
^core/src/raft/snapshot\.rs:120:40: replace \+ with \* in RaftNode<C, S>::handle_install_snapshot_response$
^core/src/raft/log\.rs:162:53: replace \&\& with \|\| in RaftLog<C>::first_index_of_term_at$
^core/src/raft/node\.rs:265:18: replace < with > in RaftNode<C, S>::entry_term$
^core/src/service/session\.rs:92:9: replace Sessions::pending \-> \&BTreeSet<\(ClientId, u64\)> with Box::leak\(Box::new\(BTreeSet::from_iter\(\[\(Default::default\(\), 1\)\]\)\)\)$
^core/src/raft/replication\.rs:140:58: replace != with == in RaftNode<C, S>::handle_append_entries$
^core/src/raft/node\.rs:555:29: replace \|\| with \&\& in RaftNode<C, S>::become_follower$
^core/src/server/deadlines\.rs:48:18: replace > with >= in LeaseDeadlines::pop_due$
^core/src/raft/node\.rs:493:52: replace == with != in RaftNode<C, S>::persist_append$
^core/src/raft/replication\.rs:26:71: replace \* with \+ in RaftNode<C, S>::flush_appends$
^core/src/raft/node\.rs:224:9: replace RaftNode<C, S>::next_deadline_ns \-> u64 with 0$
^core/src/raft/node\.rs:175:35: replace == with != in RaftNode<C, S>::propose$
^core/src/raft/election\.rs:176:71: replace \&\& with \|\| in RaftNode<C, S>::handle_request_vote$
^core/src/client/session\.rs:147:63: replace <= with > in Session::tick$
^core/src/raft/node\.rs:212:9: replace RaftNode<C, S>::compact with \(\)$
^core/src/server/expiry\.rs:255:52: replace \+ with \* in Server::maybe_checkpoint$
^core/src/service/invariants\.rs:50:33: replace > with < in StateMachine::check_locks$
^core/src/raft/election\.rs:55:9: replace RaftNode<C, S>::tick_leader with \(\)$
^core/src/server/expiry\.rs:309:12: delete ! in Server::answer_keepalive$
^core/src/service/state_machine\.rs:248:53: delete ! in StateMachine::revalidate$
^core/src/server/expiry\.rs:174:63: replace \+ with \* in Server::on_writer_wrote$
^core/src/raft/log\.rs:93:9: replace RaftLog<C>::slice \-> Vec<Entry<C>> with vec!\[Entry::from_iter\(\[Default::default\(\)\]\)\]$
^core/src/raft/log\.rs:178:47: replace \-= with \+= in RaftLog<C>::last_index_of_term$
^core/src/raft/replication\.rs:34:71: replace < with <= in RaftNode<C, S>::flush_appends$
^core/src/raft/progress\.rs:82:55: replace <= with > in Progress::on_reject$
^core/src/raft/replication\.rs:358:71: replace >= with < in RaftNode<C, S>::on_leader_commit$
^core/src/raft/election\.rs:177:58: replace > with >= in RaftNode<C, S>::handle_request_vote$
^core/src/service/session\.rs:49:9: replace Session::highest_seq \-> u64 with 1$
^core/src/service/session\.rs:49:9: replace Session::highest_seq \-> u64 with 0$
^core/src/raft/replication\.rs:223:32: replace \|= with \&= in RaftNode<C, S>::store_entries$
^core/src/client/session\.rs:108:9: replace Session::on_response \-> Option<Completion> with None$
^core/src/raft/log\.rs:195:18: replace \&\& with \|\| in RaftLog<C>::ends_consistent$
^core/src/client/session\.rs:83:23: replace \+= with \*= in Session::submit$
^core/src/raft/progress\.rs:60:54: replace \+ with \* in Progress::on_ack$
^core/src/raft/log\.rs:95:17: replace > with >= in RaftLog<C>::slice$
^core/src/raft/membership\.rs:45:42: replace \&\& with \|\| in RaftNode<C, S>::propose_conf_change_inner$
^core/src/server/process\.rs:150:9: replace Server::reply_to with \(\)$
^core/src/service/invariants\.rs:27:20: delete ! in StateMachine::check_attachments$
^core/src/raft/replication\.rs:289:38: replace \+ with \- in RaftNode<C, S>::handle_append_response$
^core/src/raft/replication\.rs:358:46: replace \&\& with \|\| in RaftNode<C, S>::on_leader_commit$
^core/src/service/lease\.rs:101:76: replace <= with > in Leases::wall_expired$
^core/src/service/writer_clock\.rs:62:9: replace StateMachine::writer_remaining_ns \-> Option<u64> with Some\(0\)$
^core/src/server/expiry\.rs:314:25: replace \&\& with \|\| in Server::answer_keepalive$
^core/src/service/invariants\.rs:47:44: delete ! in StateMachine::check_locks$
^core/src/server/expiry\.rs:202:9: replace Server::lease_housekeeping with \(\)$
^core/src/service/state_machine\.rs:272:46: replace match guard writer_clock with false in StateMachine::execute$
^core/src/raft/replication\.rs:87:9: replace RaftNode<C, S>::send_heartbeat with \(\)$
^core/src/service/state_machine\.rs:483:68: replace == with != in StateMachine::end_lease$
^core/src/raft/log\.rs:190:37: replace == with != in RaftLog<C>::ends_consistent$
^core/src/service/session\.rs:92:9: replace Sessions::pending \-> \&BTreeSet<\(ClientId, u64\)> with Box::leak\(Box::new\(BTreeSet::new\(\)\)\)$
^core/src/raft/log\.rs:142:57: replace != with == in RaftLog<C>::compact_to$
^core/src/raft/log\.rs:62:9: replace RaftLog<C>::first_index \-> LogIndex with Default::default\(\)$
^core/src/raft/replication\.rs:22:22: replace != with == in RaftNode<C, S>::flush_appends$
^core/src/service/session\.rs:100:21: replace match guard seq\.saturating_add\(self\.window\) <= session\.highest_seq with false in Sessions::lookup$
^core/src/server/deadlines\.rs:73:9: replace LeaseDeadlines::iter \-> impl Iterator<Item =\(LeaseId, u64\)>\+'_ with ::std::iter::once\(\(Default::default\(\), 1\)\)$
^core/src/server/expiry\.rs:103:65: replace \+ with \* in Server::promote$
^core/src/service/lease\.rs:86:9: replace Leases::insert with \(\)$
^core/src/raft/progress\.rs:89:36: replace \+ with \- in Progress::on_reject$
^core/src/service/lease\.rs:101:9: replace Leases::wall_expired \-> Vec<LeaseId> with vec!\[\]$
^core/src/client/session\.rs:195:40: replace \+ with \* in Session::advance_cursor_past$
^core/src/raft/node\.rs:273:9: replace RaftNode<C, S>::entry \-> Option<\&Entry<C>> with Some\(Box::leak\(Box::new\(Entry::from_iter\(\[Default::default\(\)\]\)\)\)\)$
^core/src/server/expiry\.rs:192:9: replace Server::on_entry_applied with \(\)$
^core/src/raft/replication\.rs:151:32: replace \- with \+ in RaftNode<C, S>::handle_append_entries$
^core/src/service/invariants\.rs:60:66: replace == with != in StateMachine::check_locks$
^core/src/service/session\.rs:87:9: replace Sessions::is_empty \-> bool with false$
^core/src/client/session\.rs:112:35: replace \+= with \*= in Session::on_response$
^core/src/client/session\.rs:193:37: replace \+ with \* in Session::advance_cursor_past$
^core/src/raft/replication\.rs:152:30: replace <= with > in RaftNode<C, S>::handle_append_entries$
^core/src/raft/node\.rs:277:9: replace RaftNode<C, S>::entries \-> Vec<Entry<C>> with vec!\[Entry::new\(\)\]$
^core/src/raft/snapshot\.rs:118:35: replace > with >= in RaftNode<C, S>::handle_install_snapshot_response$
^core/src/raft/replication\.rs:282:9: replace RaftNode<C, S>::handle_append_response with \(\)$
^core/src/server/expiry\.rs:270:9: replace Server::lease_deadline_ns \-> u64 with 1$
^core/src/raft/snapshot\.rs:118:35: replace > with == in RaftNode<C, S>::handle_install_snapshot_response$
^core/src/raft/node\.rs:531:17: replace > with < in RaftNode<C, S>::become_follower$
^core/src/server/process\.rs:73:9: replace Server::handle_client with \(\)$
^core/src/raft/election\.rs:123:19: replace \+= with \-= in RaftNode<C, S>::start_election$
^core/src/server/expiry\.rs:258:59: delete ! in Server::maybe_checkpoint$
^core/src/service/writer_clock\.rs:148:9: replace StateMachine::acknowledge \-> u64 with 0$
^core/src/server/event\.rs:57:5: replace fingerprint \-> u64 with 1$
^core/src/server/expiry\.rs:152:27: replace match guard self\.monotonic\(\) with true in Server::on_lease_granted$
^core/src/server/expiry\.rs:156:67: replace \+ with \- in Server::on_lease_granted$
^core/src/raft/log\.rs:44:9: replace RaftLog<C>::restored \-> Self with Default::default\(\)$
^core/src/client/session\.rs:192:64: replace == with != in Session::advance_cursor_past$
^core/src/client/session\.rs:178:42: replace \+ with \- in Session::resend$
^core/src/raft/log\.rs:174:28: replace match guard t == term with true in RaftLog<C>::last_index_of_term$
^core/src/client/session\.rs:193:42: replace % with \+ in Session::advance_cursor_past$
^core/src/client/session\.rs:114:69: replace != with == in Session::on_response$
^core/src/raft/snapshot\.rs:120:40: replace \+ with \- in RaftNode<C, S>::handle_install_snapshot_response$
^core/src/client/session\.rs:178:42: replace \+ with \* in Session::resend$
^core/src/server/process\.rs:90:9: replace Server::propose_conf_change \-> Result<LogIndex, ProposeError> with Ok\(Default::default\(\)\)$
^core/src/service/invariants\.rs:34:59: replace != with == in StateMachine::check_attachments$
^core/src/raft/election\.rs:62:40: delete ! in RaftNode<C, S>::tick_leader$
^core/src/server/config\.rs:65:9: replace ServerConfig::with_bugs \-> Self with Default::default\(\)$
^core/src/server/process\.rs:141:9: replace Server::is_leader \-> bool with true$
^core/src/service/effects\.rs:75:9: replace Batch::push with \(\)$
^core/src/raft/election\.rs:50:66: replace > with < in RaftNode<C, S>::may_campaign$
^core/src/raft/log\.rs:174:30: replace == with != in RaftLog<C>::last_index_of_term$
^core/src/service/writer_clock\.rs:38:9: replace WriterClocks::ack \-> u64 with 1$
^core/src/server/expiry\.rs:155:47: replace < with == in Server::on_lease_granted$
^core/src/server/requests\.rs:74:13: delete match arm Op::LeaseList in Server::serve_read$
^core/src/raft/node\.rs:476:9: replace RaftNode<C, S>::persist_hard_state with \(\)$
^core/src/raft/election\.rs:79:58: replace \+ with \- in RaftNode<C, S>::quorum_recently_active$
^core/src/raft/replication\.rs:289:38: replace \+ with \* in RaftNode<C, S>::handle_append_response$
^core/src/raft/log\.rs:99:23: replace \- with / in RaftLog<C>::slice$
^core/src/service/writer_clock\.rs:134:9: replace StateMachine::writer_expire with \(\)$
^core/src/server/requests\.rs:72:9: replace Server::serve_read with \(\)$
^core/src/raft/node\.rs:380:17: delete match arm Message::RequestVote\{pre_vote, \.\.\} in RaftNode<C, S>::check_term$
^core/src/server/expiry\.rs:306:70: replace \&\& with \|\| in Server::answer_keepalive$
^core/src/service/state_machine\.rs:520:55: delete ! in StateMachine::grant_waiting$
^core/src/service/state_machine\.rs:113:9: replace StateMachine::sessions \-> \&Sessions with Box::leak\(Box::new\(Default::default\(\)\)\)$
^core/src/raft/election\.rs:30:12: delete ! in RaftNode<C, S>::tick_election$
^core/src/service/session\.rs:74:9: replace Sessions::get \-> Option<\&Session> with Some\(Box::leak\(Box::new\(Default::default\(\)\)\)\)$
^core/src/server/requests\.rs:61:9: replace Server::start_read with \(\)$
^core/src/raft/log\.rs:104:9: replace RaftLog<C>::iter \-> impl Iterator<Item =\&Entry<C>> with ::std::iter::once\(Box::leak\(Box::new\(Entry::new\(\)\)\)\)$
^core/src/raft/log\.rs:203:35: replace == with != in RaftLog<C>::is_contiguous$
^core/src/raft/election\.rs:75:19: replace == with != in RaftNode<C, S>::quorum_recently_active$
^core/src/raft/replication\.rs:34:53: replace \&\& with \|\| in RaftNode<C, S>::flush_appends$
^core/src/raft/types\.rs:240:13: replace \&\& with \|\| in Ready<C, S>::is_empty$
^core/src/service/invariants\.rs:19:9: replace StateMachine::check_invariants \-> Result<\(\), String> with Ok\(\(\)\)$
^core/src/service/writer_clock\.rs:52:5: replace expiry_applies \-> bool with true$
^core/src/server/deadlines\.rs:64:9: replace LeaseDeadlines::len \-> usize with 1$
^core/src/client/session\.rs:98:9: replace Session::cancel with \(\)$
^core/src/server/output\.rs:27:9: replace ServerOutput::is_empty \-> bool with false$
^core/src/raft/node\.rs:525:49: replace \+ with \- in RaftNode<C, S>::reset_election_deadline$
^core/src/service/kv\.rs:49:9: replace Kv::is_empty \-> bool with true$
^core/src/raft/log\.rs:77:18: replace == with != in RaftLog<C>::term_at$
^core/src/service/session\.rs:110:9: replace Sessions::record_answer with \(\)$
^core/src/service/state_machine\.rs:255:53: replace match guard self\.locks\.holder\(\&key\)\.map\(\|h\| h\.token\) != Some\(token\) with false in StateMachine::revalidate$
^core/src/service/state_machine\.rs:444:27: delete ! in StateMachine::release$
^core/src/raft/log\.rs:142:66: replace \+ with \- in RaftLog<C>::compact_to$
^core/src/server/requests\.rs:94:28: replace < with > in Server::propose_request$
^core/src/client/session\.rs:73:9: replace Session::id \-> ClientId with Default::default\(\)$
^core/src/service/state_machine\.rs:480:28: delete ! in StateMachine::end_lease$
^core/src/client/session\.rs:166:9: replace Session::next_deadline_ns \-> Option<u64> with Some\(0\)$
^core/src/raft/replication\.rs:341:55: replace == with != in RaftNode<C, S>::maybe_commit$
^core/src/raft/node\.rs:260:9: replace RaftNode<C, S>::config \-> \&RaftConfig with Box::leak\(Box::new\(Default::default\(\)\)\)$
^core/src/raft/log\.rs:151:9: replace RaftLog<C>::is_up_to_date \-> bool with false$
^core/src/raft/snapshot\.rs:118:35: replace > with < in RaftNode<C, S>::handle_install_snapshot_response$
^core/src/client/session\.rs:112:35: replace \+= with \-= in Session::on_response$
^core/src/server/expiry\.rs:242:58: replace \- with / in Server::propose_writer_expiries$
^core/src/server/reads\.rs:53:30: replace > with >= in PendingReads::take_servable$
^core/src/raft/node\.rs:311:19: replace > with == in RaftNode<C, S>::hand_out_committed$
^core/src/raft/node\.rs:296:9: replace RaftNode<C, S>::begin_input with \(\)$
^core/src/raft/node\.rs:373:17: delete match arm Message::InstallSnapshot\{\.\.\} in RaftNode<C, S>::check_term$
^core/src/server/expiry\.rs:171:39: replace < with <= in Server::on_writer_wrote$
^core/src/server/output\.rs:27:88: replace \&\& with \|\| in ServerOutput::is_empty$
^core/src/service/command\.rs:55:9: delete ! in Op::is_logged$
^core/src/raft/replication\.rs:61:31: replace \- with / in RaftNode<C, S>::send_append$
^core/src/raft/log\.rs:203:62: replace \+ with \* in RaftLog<C>::is_contiguous$
^core/src/server/process\.rs:103:9: replace Server::next_deadline_ns \-> u64 with 1$
^core/src/service/lease\.rs:71:9: replace Leases::ids \-> Vec<LeaseId> with vec!\[\]$
^core/src/server/reads\.rs:53:30: replace > with == in PendingReads::take_servable$
^core/src/server/expiry\.rs:94:31: replace == with != in Server::promote$
^core/src/raft/read_index\.rs:51:9: replace RaftNode<C, S>::read_index_inner \-> Result<\(\), ProposeError> with Ok\(\(\)\)$
^core/src/raft/log\.rs:77:9: replace RaftLog<C>::term_at \-> Option<Term> with Some\(Default::default\(\)\)$
^core/src/raft/membership\.rs:35:22: replace != with == in RaftNode<C, S>::propose_conf_change_inner$
^core/src/server/deadlines\.rs:48:18: replace > with < in LeaseDeadlines::pop_due$
^core/src/server/expiry\.rs:103:53: replace \+ with \- in Server::promote$
^core/src/service/invariants\.rs:50:33: replace > with == in StateMachine::check_locks$
^core/src/raft/node\.rs:525:49: replace \+ with \* in RaftNode<C, S>::reset_election_deadline$
^core/src/server/process\.rs:279:18: replace > with == in Server::maybe_compact$
^core/src/raft/log\.rs:85:18: replace <= with > in RaftLog<C>::get$
^core/src/raft/snapshot\.rs:43:9: replace RaftNode<C, S>::send_snapshot with \(\)$
^core/src/raft/progress\.rs:81:9: replace Progress::on_reject \-> bool with false$
