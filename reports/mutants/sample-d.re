^core/src/service/state_machine\.rs:117:9: replace StateMachine::settings \-> \&MachineSettings with Box::leak\(Box::new\(Default::default\(\)\)\)$
^core/src/server/expiry\.rs:163:47: replace < with == in Server::on_lease_granted$
^core/src/client/belief\.rs:80:53: replace < with == in Belief::holds$
^core/src/raft/progress\.rs:92:57: replace \+ with \* in Progress::in_flight$
^core/src/raft/persist\.rs:66:57: replace > with >= in Persisted<C, S>::refusal$
^core/src/raft/node\.rs:307:9: replace RaftNode<C, S>::check_term \-> bool with false$
^core/src/raft/log\.rs:147:9: replace RaftLog<C>::last_index_of_term \-> Option<LogIndex> with Some\(Default::default\(\)\)$
^core/src/raft/election\.rs:108:38: replace \+ with \* in RaftNode<C, S>::start_pre_vote$
^core/src/server/process\.rs:292:9: replace Server::maybe_compact with \(\)$
^core/src/server/expiry\.rs:342:25: replace \&\& with \|\| in Server::answer_keepalive$
^core/src/raft/log\.rs:35:9: replace RaftLog<C>::restored \-> Self with Default::default\(\)$
^core/src/server/process\.rs:144:9: replace Server::observe with \(\)$
^core/src/raft/node\.rs:139:17: replace != with == in RaftNode<C, S>::step$
^core/src/server/requests\.rs:132:64: replace == with != in Server::propose_request$
^core/src/service/session\.rs:98:9: replace Sessions::record_answer with \(\)$
^core/src/server/requests\.rs:91:13: delete match arm Op::Get\{key\} in Server::serve_read$
^core/src/service/invariants\.rs:63:41: replace \&\& with \|\| in StateMachine::check_locks$
^core/src/server/process\.rs:294:61: replace \+ with \- in Server::maybe_compact$
^core/src/raft/log\.rs:170:89: replace \+ with \* in RaftLog<C>::is_contiguous$
^core/src/raft/progress\.rs:47:30: replace > with >= in Progress::on_ack$
^core/src/service/lease\.rs:108:9: replace Leases::wall_expired \-> Vec<LeaseId> with vec!\[Default::default\(\)\]$
^core/src/raft/node\.rs:274:9: replace RaftNode<C, S>::pending_reads \-> usize with 1$
^core/src/server/expiry\.rs:182:63: replace \+ with \- in Server::on_writer_wrote$
^core/src/raft/types\.rs:236:13: replace \&\& with \|\| in Ready<C, S>::is_empty$
^core/src/raft/node\.rs:307:9: replace RaftNode<C, S>::check_term \-> bool with true$
^core/src/raft/snapshot\.rs:62:54: replace \+ with \- in RaftNode<C, S>::handle_install_snapshot$
^core/src/raft/progress\.rs:65:64: replace \+ with \* in Progress::on_ack$
^core/src/raft/node\.rs:310:17: delete match arm Message::RequestVote\{pre_vote, \.\.\} in RaftNode<C, S>::check_term$
^core/src/server/deadlines\.rs:46:9: replace LeaseDeadlines::pop_due \-> Vec<LeaseId> with vec!\[Default::default\(\)\]$
^core/src/raft/node\.rs:270:60: replace >= with < in RaftNode<C, S>::has_committed_in_term$
^core/src/raft/progress\.rs:92:57: replace \+ with \- in Progress::in_flight$
^core/src/raft/election\.rs:160:9: replace RaftNode<C, S>::handle_vote_response with \(\)$
^core/src/raft/election\.rs:55:24: replace < with == in RaftNode<C, S>::tick_leader$
^core/src/raft/replication\.rs:210:67: replace >= with < in RaftNode<C, S>::store_entries$
^core/src/raft/progress\.rs:58:56: replace match guard self\.match_index >= snap with true in Progress::on_ack$
^core/src/server/deadlines\.rs:29:9: replace LeaseDeadlines::disarm \-> Option<u64> with None$
^core/src/raft/election\.rs:122:25: replace == with != in RaftNode<C, S>::start_election$
^core/src/raft/replication\.rs:22:9: replace RaftNode<C, S>::flush_appends with \(\)$
^core/src/server/process\.rs:284:9: replace Server::serve_reads with \(\)$
^core/src/raft/replication\.rs:155:27: replace < with > in RaftNode<C, S>::handle_append_entries$
^core/src/raft/election\.rs:70:9: replace RaftNode<C, S>::quorum_recently_active \-> bool with true$
^core/src/service/lease\.rs:78:9: replace Leases::ids \-> Vec<LeaseId> with vec!\[\]$
^core/src/server/expiry\.rs:150:9: replace Server::on_state_replaced with \(\)$
^core/src/server/process\.rs:158:9: replace Server::reply_to with \(\)$
^core/src/raft/replication\.rs:259:38: replace \+ with \- in RaftNode<C, S>::handle_append_response$
^core/src/service/lease\.rs:69:9: replace Leases::is_empty \-> bool with false$
^core/src/service/lease\.rs:65:9: replace Leases::len \-> usize with 0$
^core/src/raft/read_index\.rs:79:32: replace match guard read\.round <= confirmed_round with true in RaftNode<C, S>::advance_reads$
^core/src/client/session\.rs:73:9: replace Session::leader_guess \-> Option<NodeId> with None$
^core/src/service/session\.rs:49:9: replace Session::records \-> impl Iterator<Item =\(\&u64, \&Record\)> with ::std::iter::empty\(\)$
^core/src/service/state_machine\.rs:573:55: delete ! in StateMachine::grant_waiting$
^core/src/client/session\.rs:168:42: replace \+ with \- in Session::resend$
^core/src/server/deadlines\.rs:64:9: replace LeaseDeadlines::is_empty \-> bool with false$
^core/src/server/reads\.rs:53:30: replace > with < in PendingReads::take_servable$
^core/src/server/expiry\.rs:198:39: replace < with == in Server::on_lease_renewed$
^core/src/raft/replication\.rs:51:41: replace \- with \+ in RaftNode<C, S>::send_append$
^core/src/raft/progress\.rs:82:36: replace \+ with \* in Progress::on_reject$
^core/src/service/state_machine\.rs:573:20: delete ! in StateMachine::grant_waiting$
^core/src/raft/snapshot\.rs:61:41: replace != with == in RaftNode<C, S>::handle_install_snapshot$
^core/src/service/state_machine\.rs:477:9: replace StateMachine::acquire \-> Option<Response> with None$
^core/src/server/requests\.rs:102:9: replace Server::propose_request with \(\)$
^core/src/server/deadlines\.rs:69:9: replace LeaseDeadlines::iter \-> impl Iterator<Item =\(LeaseId, u64\)>\+'_ with ::std::iter::empty\(\)$
^core/src/raft/replication\.rs:62:59: replace \+= with \*= in RaftNode<C, S>::send_append$
^core/src/raft/log\.rs:154:34: replace > with < in RaftLog<C>::last_index_of_term$
^core/src/server/expiry\.rs:160:27: replace match guard self\.monotonic\(\) \|\| self\.measured\(lease\) with true in Server::on_lease_granted$
^core/src/server/process\.rs:170:9: replace Server::after_input with \(\)$
^core/src/service/command\.rs:129:9: replace KeyCompare::holds \-> bool with false$
^core/src/raft/log\.rs:102:27: replace \- with \+ in RaftLog<C>::truncate_from$
^core/src/raft/election\.rs:198:48: replace \+ with \- in RaftNode<C, S>::become_leader$
^core/src/raft/election\.rs:202:50: replace \+ with \* in RaftNode<C, S>::become_leader$
^core/src/server/requests\.rs:115:62: replace \&\& with \|\| in Server::propose_request$
^core/src/raft/log\.rs:150:30: replace == with != in RaftLog<C>::last_index_of_term$
^core/src/raft/election\.rs:74:99: replace \+ with \* in RaftNode<C, S>::quorum_recently_active$
^core/src/raft/election\.rs:50:9: replace RaftNode<C, S>::may_campaign \-> bool with false$
^core/src/raft/persist\.rs:39:9: replace Persisted<C, S>::refusal \-> Option<String> with Some\("xyzzy"\.into\(\)\)$
^core/src/raft/log\.rs:78:17: replace > with >= in RaftLog<C>::slice$
^core/src/raft/election\.rs:58:50: replace \+ with \* in RaftNode<C, S>::tick_leader$
^core/src/service/lock\.rs:69:9: replace Locks::iter \-> impl Iterator<Item =\(\&String, \&LockQueue\)> with ::std::iter::once\(\(Box::leak\(Box::new\(String::new\(\)\)\), Box::leak\(Box::new\(Default::default\(\)\)\)\)\)$
^core/src/raft/election\.rs:27:24: replace < with == in RaftNode<C, S>::tick_election$
^core/src/service/writer_clock\.rs:46:9: replace WriterClocks::ack \-> u64 with 1$
^core/src/client/belief\.rs:84:9: replace Belief::until_ns \-> Option<u64> with None$
^core/src/service/session\.rs:75:9: replace Sessions::clients \-> Vec<ClientId> with vec!\[Default::default\(\)\]$
^core/src/service/lock\.rs:65:9: replace Locks::holder \-> Option<\&Holder> with None$
^core/src/raft/log\.rs:68:9: replace RaftLog<C>::get \-> Option<\&Entry<C>> with Some\(Box::leak\(Box::new\(Entry::from\(Default::default\(\)\)\)\)\)$
^core/src/server/process\.rs:75:9: replace Server::handle_peer with \(\)$
^core/src/raft/election\.rs:70:9: replace RaftNode<C, S>::quorum_recently_active \-> bool with false$
^core/src/client/belief\.rs:65:33: replace \+ with \- in Belief::acknowledge$
^core/src/raft/persist\.rs:42:28: replace < with <= in Persisted<C, S>::refusal$
^core/src/client/belief\.rs:80:9: replace Belief::holds \-> bool with false$
^core/src/service/state_machine\.rs:566:9: replace StateMachine::grant_waiting with \(\)$
^core/src/service/writer_clock\.rs:156:9: replace StateMachine::writer_expire with \(\)$
^core/src/raft/election\.rs:27:24: replace < with > in RaftNode<C, S>::tick_election$
^core/src/raft/log\.rs:175:9: replace RaftLog<C>::terms_monotonic \-> bool with true$
^core/src/raft/election\.rs:114:19: replace \+= with \*= in RaftNode<C, S>::start_election$
^core/src/service/lease\.rs:69:9: replace Leases::is_empty \-> bool with true$
^core/src/raft/node\.rs:440:17: replace > with >= in RaftNode<C, S>::become_follower$
^core/src/service/invariants\.rs:66:40: replace <= with > in StateMachine::check_locks$
^core/src/raft/snapshot\.rs:15:26: replace <= with > in RaftNode<C, S>::compact_inner$
^core/src/raft/node\.rs:164:9: replace RaftNode<C, S>::propose \-> Result<LogIndex, ProposeError> with Ok\(Default::default\(\)\)$
^core/src/service/state_machine\.rs:265:9: replace StateMachine::apply_logged with \(\)$
^core/src/raft/election\.rs:161:99: replace == with != in RaftNode<C, S>::handle_vote_response$
^core/src/raft/replication\.rs:259:38: replace \+ with \* in RaftNode<C, S>::handle_append_response$
^core/src/server/requests\.rs:110:63: replace == with != in Server::propose_request$
^core/src/service/state_machine\.rs:424:25: replace match guard id != 0 with true in StateMachine::grant_lease$
^core/src/server/requests\.rs:104:13: delete match arm Op::LeaseClaim\{ttl_ns, \.\.\} in Server::propose_request$
^core/src/raft/node\.rs:319:24: delete ! in RaftNode<C, S>::check_term$
^core/src/client/session\.rs:156:9: replace Session::next_deadline_ns \-> Option<u64> with Some\(0\)$
^core/src/client/session\.rs:145:40: replace \+ with \- in Session::tick$
^core/src/server/expiry\.rs:175:9: replace Server::on_writer_wrote with \(\)$
^core/src/server/reads\.rs:64:9: replace PendingReads::take_confirmed_where \-> Vec<ClientRequest> with vec!\[\]$
^core/src/service/state_machine\.rs:181:9: replace StateMachine::apply \-> Vec<Effect> with vec!\[Default::default\(\)\]$
^core/src/raft/node\.rs:165:35: replace == with != in RaftNode<C, S>::propose$
^core/src/service/state_machine\.rs:420:25: replace match guard id != 0 \&\& self\.leases\.contains\(id\) with true in StateMachine::grant_lease$
^core/src/server/deadlines\.rs:40:9: replace LeaseDeadlines::next \-> Option<u64> with None$
^core/src/service/state_machine\.rs:502:71: replace == with != in StateMachine::release$
^core/src/client/belief\.rs:84:9: replace Belief::until_ns \-> Option<u64> with Some\(0\)$
^core/src/service/invariants\.rs:57:20: delete ! in StateMachine::check_locks$
^core/src/server/expiry\.rs:164:55: replace \+ with \* in Server::on_lease_granted$
^core/src/raft/replication\.rs:196:24: replace <= with > in RaftNode<C, S>::store_entries$
^core/src/raft/election\.rs:165:12: delete ! in RaftNode<C, S>::handle_vote_response$
^core/src/raft/node\.rs:434:49: replace \+ with \- in RaftNode<C, S>::reset_election_deadline$
^core/src/server/deadlines\.rs:69:9: replace LeaseDeadlines::iter \-> impl Iterator<Item =\(LeaseId, u64\)>\+'_ with ::std::iter::once\(\(Default::default\(\), 1\)\)$
^core/src/server/expiry\.rs:182:51: replace \+ with \- in Server::on_writer_wrote$
^core/src/service/writer_clock\.rs:172:60: replace == with != in StateMachine::measured_expire$
^core/src/raft/node\.rs:261:9: replace RaftNode<C, S>::entries \-> Vec<Entry<C>> with vec!\[Entry::from\(Default::default\(\)\)\]$
^core/src/raft/replication\.rs:251:22: replace != with == in RaftNode<C, S>::handle_append_response$
^core/src/client/session\.rs:174:9: replace Session::send with \(\)$
^core/src/raft/replication\.rs:87:52: replace \- with \+ in RaftNode<C, S>::send_heartbeat$
^core/src/server/expiry\.rs:245:106: replace <= with > in Server::lease_housekeeping$
^core/src/server/expiry\.rs:190:9: replace Server::measured \-> bool with true$
^core/src/server/deadlines\.rs:48:18: replace > with >= in LeaseDeadlines::pop_due$
^core/src/raft/persist\.rs:88:49: replace > with == in Persisted<C, S>::apply$
^core/src/service/state_machine\.rs:305:9: replace StateMachine::answer with \(\)$
^core/src/service/state_machine\.rs:296:53: replace match guard self\.locks\.holder\(\&key\)\.map\(\|h\| h\.token\) != Some\(token\) with false in StateMachine::revalidate$
^core/src/raft/replication\.rs:26:71: replace \* with \+ in RaftNode<C, S>::flush_appends$
^core/src/server/expiry\.rs:226:9: replace Server::lease_housekeeping with \(\)$
^core/src/raft/progress\.rs:74:9: replace Progress::on_reject \-> bool with true$
^core/src/service/state_machine\.rs:458:21: replace match guard self\.settings\.bugs\.keepalive_after_revoke with true in StateMachine::refresh$
^core/src/service/invariants\.rs:50:33: replace > with < in StateMachine::check_locks$
^core/src/raft/election\.rs:55:9: replace RaftNode<C, S>::tick_leader with \(\)$
^core/src/raft/replication\.rs:157:30: replace <= with > in RaftNode<C, S>::handle_append_entries$
^core/src/server/expiry\.rs:190:9: replace Server::measured \-> bool with false$
^core/src/raft/membership\.rs:39:53: replace \&\& with \|\| in RaftNode<C, S>::propose_conf_change_inner$
^core/src/service/state_machine\.rs:149:9: replace StateMachine::applied_digest \-> u64 with 0$
^core/src/raft/election\.rs:179:71: replace == with != in RaftNode<C, S>::tally$
^core/src/raft/replication\.rs:306:28: delete ! in RaftNode<C, S>::maybe_commit$
^core/src/service/state_machine\.rs:383:47: delete ! in StateMachine::put_if$
^core/src/client/session\.rs:103:35: replace \+= with \-= in Session::on_response$
^core/src/raft/read_index\.rs:55:26: replace \+= with \*= in RaftNode<C, S>::read_index_inner$
^core/src/raft/log\.rs:45:29: replace \+ with \- in RaftLog<C>::first_index$
^core/src/service/state_machine\.rs:420:33: replace \&\& with \|\| in StateMachine::grant_lease$
^core/src/raft/node\.rs:138:9: replace RaftNode<C, S>::step with \(\)$
^core/src/server/config\.rs:78:9: replace ServerConfig::machine_settings \-> MachineSettings with Default::default\(\)$
^core/src/server/requests\.rs:132:72: replace \&\& with \|\| in Server::propose_request$
^core/src/raft/node\.rs:153:22: replace == with != in RaftNode<C, S>::tick$
^core/src/raft/progress\.rs:47:30: replace > with < in Progress::on_ack$
^core/src/service/writer_clock\.rs:158:19: replace != with == in StateMachine::writer_expire$
^core/src/service/state_machine\.rs:335:20: delete ! in StateMachine::execute$
^core/src/raft/log\.rs:170:89: replace \+ with \- in RaftLog<C>::is_contiguous$
^core/src/service/state_machine\.rs:413:19: replace < with <= in StateMachine::grant_lease$
^core/src/raft/persist\.rs:45:67: replace \&\& with \|\| in Persisted<C, S>::refusal$
^core/src/service/invariants\.rs:27:20: delete ! in StateMachine::check_attachments$
^core/src/raft/persist\.rs:79:79: replace < with <= in Persisted<C, S>::apply$
^core/src/service/lease\.rs:61:9: replace Leases::contains \-> bool with false$
^core/src/raft/log\.rs:71:55: replace \- with / in RaftLog<C>::get$
^core/src/raft/replication\.rs:306:25: replace \&\& with \|\| in RaftNode<C, S>::maybe_commit$
^core/src/raft/node\.rs:294:9: replace RaftNode<C, S>::hand_out_committed with \(\)$
^core/src/raft/snapshot\.rs:61:94: replace > with == in RaftNode<C, S>::handle_install_snapshot$
^core/src/client/session\.rs:183:42: replace % with \+ in Session::advance_cursor_past$
^core/src/service/invariants\.rs:47:44: delete ! in StateMachine::check_locks$
^core/src/raft/persist\.rs:39:9: replace Persisted<C, S>::refusal \-> Option<String> with None$
^core/src/service/state_machine\.rs:295:50: replace match guard !self\.leases\.contains\(lease\) with false in StateMachine::revalidate$
^core/src/client/belief\.rs:64:41: replace \* with / in Belief::acknowledge$
^core/src/raft/replication\.rs:33:63: replace <= with > in RaftNode<C, S>::flush_appends$
^core/src/raft/log\.rs:76:9: replace RaftLog<C>::slice \-> Vec<Entry<C>> with vec!\[Entry::from\(Default::default\(\)\)\]$
^core/src/raft/node\.rs:249:18: replace < with > in RaftNode<C, S>::entry_term$
^core/src/raft/replication\.rs:22:22: replace != with == in RaftNode<C, S>::flush_appends$
^core/src/client/session\.rs:181:9: replace Session::advance_cursor_past with \(\)$
^core/src/service/kv\.rs:74:9: replace Kv::delete \-> Option<KvValue> with Some\(Default::default\(\)\)$
^core/src/service/state_machine\.rs:55:47: replace / with % in min_ttl_ns$
^core/src/raft/election\.rs:146:58: replace > with == in RaftNode<C, S>::handle_request_vote$
^core/src/client/belief\.rs:80:53: replace < with <= in Belief::holds$
^core/src/raft/persist\.rs:79:79: replace < with > in Persisted<C, S>::apply$
^core/src/raft/progress\.rs:53:37: replace match guard self\.match_index \+ 1 >= self\.next_index with false in Progress::on_ack$
^core/src/raft/log\.rs:177:47: replace <= with > in RaftLog<C>::terms_monotonic$
^core/src/service/lease\.rs:93:9: replace Leases::insert with \(\)$
^core/src/service/invariants\.rs:60:66: replace == with != in StateMachine::check_locks$
^core/src/raft/membership\.rs:114:9: replace RaftNode<C, S>::voters_as_of \-> BTreeSet<NodeId> with BTreeSet::new\(\)$
^core/src/raft/node\.rs:270:35: replace \&\& with \|\| in RaftNode<C, S>::has_committed_in_term$
^core/src/service/writer_clock\.rs:62:5: replace expiry_applies \-> bool with true$
^core/src/server/expiry\.rs:278:9: replace Server::maybe_checkpoint with \(\)$
^core/src/raft/election\.rs:161:73: replace \+ with \- in RaftNode<C, S>::handle_vote_response$
^core/src/server/expiry\.rs:163:47: replace < with <= in Server::on_lease_granted$
^core/src/raft/log\.rs:138:21: replace > with < in RaftLog<C>::first_index_of_term_at$
^core/src/service/state_machine\.rs:311:49: replace == with != in StateMachine::execute$
^core/src/raft/replication\.rs:148:12: delete ! in RaftNode<C, S>::handle_append_entries$
^core/src/raft/node\.rs:270:19: replace == with != in RaftNode<C, S>::has_committed_in_term$
^core/src/raft/node\.rs:295:19: replace > with >= in RaftNode<C, S>::hand_out_committed$
^core/src/raft/election\.rs:181:20: replace >= with < in RaftNode<C, S>::tally$
^core/src/service/writer_clock\.rs:72:9: replace StateMachine::writer_remaining_ns \-> Option<u64> with Some\(0\)$
^core/src/server/expiry\.rs:101:65: replace \+ with \* in Server::promote$
^core/src/service/state_machine\.rs:318:45: replace match guard writer_clock with false in StateMachine::execute$
^core/src/server/process\.rs:294:61: replace \+ with \* in Server::maybe_compact$
^core/src/service/lease\.rs:108:76: replace <= with > in Leases::wall_expired$
^core/src/server/requests\.rs:112:28: replace < with <= in Server::propose_request$
^core/src/raft/log\.rs:111:18: replace <= with > in RaftLog<C>::compact_to$
^core/src/service/state_machine\.rs:55:5: replace min_ttl_ns \-> u64 with 1$
^core/src/service/state_machine\.rs:55:5: replace min_ttl_ns \-> u64 with 0$
^core/src/raft/replication\.rs:82:9: replace RaftNode<C, S>::send_heartbeat with \(\)$
^core/src/server/event\.rs:124:5: replace fingerprint \-> u64 with 1$
^core/src/server/requests\.rs:162:21: replace match guard self\.raft\.has_committed_in_term\(\) with true in Server::propose_refresh$
^core/src/service/lease\.rs:108:9: replace Leases::wall_expired \-> Vec<LeaseId> with vec!\[\]$
^core/src/server/process\.rs:149:26: replace == with != in Server::is_leader$
^core/src/server/expiry\.rs:101:53: replace \+ with \- in Server::promote$
^core/src/raft/persist\.rs:27:9: replace Persisted<C, S>::last_term \-> Term with Default::default\(\)$
^core/src/server/expiry\.rs:164:67: replace \+ with \* in Server::on_lease_granted$
^core/src/server/expiry\.rs:199:69: replace \+ with \- in Server::on_lease_renewed$
^core/src/service/state_machine\.rs:292:9: replace StateMachine::revalidate \-> Response with Default::default\(\)$
^core/src/service/invariants\.rs:34:59: replace != with == in StateMachine::check_attachments$
^core/src/raft/election\.rs:62:40: delete ! in RaftNode<C, S>::tick_leader$
^core/src/raft/log\.rs:177:37: replace \&\& with \|\| in RaftLog<C>::terms_monotonic$
^core/src/raft/log\.rs:78:17: replace > with == in RaftLog<C>::slice$
^core/src/client/belief\.rs:80:53: replace < with > in Belief::holds$
^core/src/raft/election\.rs:50:66: replace > with < in RaftNode<C, S>::may_campaign$
^core/src/server/process\.rs:209:9: replace Server::install with \(\)$
^core/src/raft/node\.rs:261:9: replace RaftNode<C, S>::entries \-> Vec<Entry<C>> with vec!\[\]$
^core/src/raft/replication\.rs:126:9: replace RaftNode<C, S>::accept_leader_contact \-> bool with true$
^core/src/raft/log\.rs:127:33: replace >= with < in RaftLog<C>::is_up_to_date$
^core/src/service/writer_clock\.rs:46:9: replace WriterClocks::ack \-> u64 with 0$
^core/src/server/process\.rs:294:33: replace >= with < in Server::maybe_compact$
^core/src/server/expiry\.rs:199:69: replace \+ with \* in Server::on_lease_renewed$
^core/src/raft/node\.rs:295:19: replace > with < in RaftNode<C, S>::hand_out_committed$
^core/src/raft/log\.rs:163:9: replace RaftLog<C>::ends_consistent \-> bool with true$
^core/src/raft/log\.rs:71:33: replace \- with / in RaftLog<C>::get$
^core/src/raft/election\.rs:30:12: delete ! in RaftNode<C, S>::tick_election$
^core/src/raft/election\.rs:90:42: replace \&\& with \|\| in RaftNode<C, S>::in_vote_lease$
^core/src/raft/log\.rs:76:9: replace RaftLog<C>::slice \-> Vec<Entry<C>> with vec!\[Entry::new\(\)\]$
^core/src/raft/node\.rs:432:9: replace RaftNode<C, S>::reset_election_deadline with \(\)$
^core/src/raft/types\.rs:240:13: replace \&\& with \|\| in Ready<C, S>::is_empty$
^core/src/service/kv\.rs:53:9: replace Kv::put \-> Option<LeaseId> with None$
^core/src/service/invariants\.rs:19:9: replace StateMachine::check_invariants \-> Result<\(\), String> with Ok\(\(\)\)$
^core/src/raft/node\.rs:406:9: replace RaftNode<C, S>::persist_append with \(\)$
^core/src/server/expiry\.rs:206:12: delete ! in Server::on_lease_ended$
^core/src/raft/node\.rs:335:17: delete match arm Message::AppendEntries\{\.\.\} in RaftNode<C, S>::check_term$
^core/src/raft/node\.rs:462:29: replace \|\| with \&\& in RaftNode<C, S>::become_follower$
^core/src/raft/log\.rs:60:18: replace == with != in RaftLog<C>::term_at$
^core/src/raft/log\.rs:153:30: replace < with == in RaftLog<C>::last_index_of_term$
^core/src/server/process\.rs:239:9: replace Server::handle_effects with \(\)$
^core/src/raft/node\.rs:219:9: replace RaftNode<C, S>::role \-> Role with Default::default\(\)$
^core/src/raft/node\.rs:332:21: replace < with == in RaftNode<C, S>::check_term$
^core/src/client/session\.rs:185:40: replace \+ with \* in Session::advance_cursor_past$
^core/src/raft/log\.rs:153:30: replace < with <= in RaftLog<C>::last_index_of_term$
^core/src/service/state_machine\.rs:370:9: replace StateMachine::delete \-> Response with Default::default\(\)$
^core/src/client/session\.rs:79:23: replace \+= with \*= in Session::submit$
^core/src/server/reads\.rs:53:30: replace > with >= in PendingReads::take_servable$
^core/src/raft/log\.rs:148:21: replace >= with < in RaftLog<C>::last_index_of_term$
^core/src/server/deadlines\.rs:69:9: replace LeaseDeadlines::iter \-> impl Iterator<Item =\(LeaseId, u64\)>\+'_ with ::std::iter::once\(\(Default::default\(\), 0\)\)$
^core/src/raft/node\.rs:390:31: replace \+ with \* in RaftNode<C, S>::quorum$
^core/src/raft/node\.rs:390:9: replace RaftNode<C, S>::quorum \-> usize with 1$
^core/src/server/expiry\.rs:206:9: replace Server::on_lease_ended with \(\)$
^core/src/raft/node\.rs:241:9: replace RaftNode<C, S>::voted_for \-> Option<NodeId> with Some\(Default::default\(\)\)$
^core/src/service/writer_clock\.rs:72:9: replace StateMachine::writer_remaining_ns \-> Option<u64> with Some\(1\)$
^core/src/service/kv\.rs:53:9: replace Kv::put \-> Option<LeaseId> with Some\(Default::default\(\)\)$
^core/src/service/session\.rs:49:9: replace Session::records \-> impl Iterator<Item =\(\&u64, \&Record\)> with ::std::iter::once\(\(Box::leak\(Box::new\(0\)\), Box::leak\(Box::new\(Default::default\(\)\)\)\)\)$
^core/src/raft/log\.rs:45:9: replace RaftLog<C>::first_index \-> LogIndex with Default::default\(\)$
^core/src/raft/node\.rs:257:9: replace RaftNode<C, S>::entry \-> Option<\&Entry<C>> with Some\(Box::leak\(Box::new\(Entry::from_iter\(\[Default::default\(\)\]\)\)\)\)$
^core/src/client/session\.rs:105:69: replace != with == in Session::on_response$
^core/src/raft/snapshot\.rs:53:32: replace <= with > in RaftNode<C, S>::handle_install_snapshot$
^core/src/raft/replication\.rs:179:23: replace > with >= in RaftNode<C, S>::handle_append_entries$
^core/src/server/reads\.rs:53:30: replace > with == in PendingReads::take_servable$
^core/src/raft/log\.rs:127:9: replace RaftLog<C>::is_up_to_date \-> bool with false$
^core/src/server/expiry\.rs:262:91: replace <= with > in Server::propose_writer_expiries$
^core/src/raft/election\.rs:74:111: replace > with < in RaftNode<C, S>::quorum_recently_active$
^core/src/service/state_machine\.rs:314:58: replace match guard writer_clock with true in StateMachine::execute$
^core/src/raft/snapshot\.rs:35:9: replace RaftNode<C, S>::send_snapshot with \(\)$
^core/src/raft/log\.rs:147:9: replace RaftLog<C>::last_index_of_term \-> Option<LogIndex> with None$
^core/src/raft/node\.rs:257:9: replace RaftNode<C, S>::entry \-> Option<\&Entry<C>> with Some\(Box::leak\(Box::new\(Entry::from\(Default::default\(\)\)\)\)\)$
^core/src/service/writer_clock\.rs:171:9: replace StateMachine::measured_expire with \(\)$
^core/src/raft/election\.rs:180:72: replace == with != in RaftNode<C, S>::tally$
^core/src/client/session\.rs:165:9: replace Session::resend with \(\)$
^core/src/client/session\.rs:79:23: replace \+= with \-= in Session::submit$
^core/src/server/requests\.rs:46:77: replace match guard !self\.config\.keepalive_read_index with true in Server::on_request$
^core/src/server/deadlines\.rs:48:18: replace > with < in LeaseDeadlines::pop_due$
^core/src/service/lease\.rs:98:9: replace Leases::remove \-> Option<Lease> with None$
^core/src/service/invariants\.rs:50:33: replace > with == in StateMachine::check_locks$
^core/src/raft/log\.rs:101:9: replace RaftLog<C>::truncate_from with \(\)$
^core/src/service/state_machine\.rs:129:9: replace StateMachine::sessions \-> \&Sessions with Box::leak\(Box::new\(Default::default\(\)\)\)$
^core/src/service/lease\.rs:102:9: replace Leases::get_mut \-> Option<\&mut Lease> with None$
^core/src/service/writer_clock\.rs:133:51: replace == with != in StateMachine::extend_lease$
^core/src/service/state_machine\.rs:468:64: replace < with > in StateMachine::checkpoint$
^core/src/service/kv\.rs:37:9: replace Kv::get \-> Option<\&KvValue> with None$
^core/src/service/lock\.rs:84:72: replace == with != in Locks::keys_of_lease$
^core/src/raft/persist\.rs:66:57: replace > with < in Persisted<C, S>::refusal$
^core/src/server/process\.rs:149:9: replace Server::is_leader \-> bool with false$
^core/src/raft/log\.rs:102:27: replace \- with / in RaftLog<C>::truncate_from$
^core/src/raft/log\.rs:138:75: replace \- with / in RaftLog<C>::first_index_of_term_at$
^core/src/server/reads\.rs:69:9: replace PendingReads::len \-> usize with 0$
^core/src/server/expiry\.rs:164:67: replace \+ with \- in Server::on_lease_granted$
^core/src/raft/types\.rs:239:13: replace \&\& with \|\| in Ready<C, S>::is_empty$
^core/src/raft/log\.rs:82:23: replace \- with \+ in RaftLog<C>::slice$
