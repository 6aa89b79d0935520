^core/src/raft/replication\.rs:163:22: replace != with == in RaftNode<C, S>::accept_leader_contact$
^core/src/raft/replication\.rs:163:58: replace != with == in RaftNode<C, S>::accept_leader_contact$
^core/src/raft/replication\.rs:182:9: replace RaftNode<C, S>::handle_append_entries with \(\)$
^core/src/raft/replication\.rs:182:12: delete ! in RaftNode<C, S>::handle_append_entries$
^core/src/raft/replication\.rs:189:27: replace < with == in RaftNode<C, S>::handle_append_entries$
^core/src/raft/replication\.rs:189:27: replace < with > in RaftNode<C, S>::handle_append_entries$
^core/src/raft/replication\.rs:189:27: replace < with <= in RaftNode<C, S>::handle_append_entries$
^core/src/raft/replication\.rs:190:32: replace \- with \+ in RaftNode<C, S>::handle_append_entries$
^core/src/raft/replication\.rs:190:32: replace \- with / in RaftNode<C, S>::handle_append_entries$
^core/src/raft/replication\.rs:191:30: replace <= with > in RaftNode<C, S>::handle_append_entries$
^core/src/raft/replication\.rs:200:45: replace != with == in RaftNode<C, S>::handle_append_entries$
^core/src/raft/replication\.rs:202:48: replace \+ with \- in RaftNode<C, S>::handle_append_entries$
^core/src/raft/replication\.rs:202:48: replace \+ with \* in RaftNode<C, S>::handle_append_entries$
^core/src/raft/replication\.rs:203:87: replace \+ with \- in RaftNode<C, S>::handle_append_entries$
^core/src/raft/replication\.rs:203:87: replace \+ with \* in RaftNode<C, S>::handle_append_entries$
^core/src/raft/replication\.rs:208:45: replace \+ with \- in RaftNode<C, S>::handle_append_entries$
^core/src/raft/replication\.rs:208:45: replace \+ with \* in RaftNode<C, S>::handle_append_entries$
^core/src/raft/replication\.rs:213:23: replace > with == in RaftNode<C, S>::handle_append_entries$
^core/src/raft/replication\.rs:213:23: replace > with < in RaftNode<C, S>::handle_append_entries$
^core/src/raft/replication\.rs:213:23: replace > with >= in RaftNode<C, S>::handle_append_entries$
^core/src/raft/replication\.rs:223:9: replace RaftNode<C, S>::store_entries with \(\)$
^core/src/raft/replication\.rs:223:85: replace != with == in RaftNode<C, S>::store_entries$
^core/src/raft/replication\.rs:230:24: replace <= with > in RaftNode<C, S>::store_entries$
^core/src/raft/replication\.rs:237:37: delete ! in RaftNode<C, S>::store_entries$
^core/src/raft/replication\.rs:244:32: replace \|= with \&= in RaftNode<C, S>::store_entries$
^core/src/raft/replication\.rs:244:82: replace \&\& with \|\| in RaftNode<C, S>::store_entries$
^core/src/raft/replication\.rs:244:67: replace >= with < in RaftNode<C, S>::store_entries$
^core/src/raft/replication\.rs:250:12: delete ! in RaftNode<C, S>::store_entries$
^core/src/raft/replication\.rs:273:9: replace RaftNode<C, S>::reply_append with \(\)$
^core/src/raft/replication\.rs:287:9: replace RaftNode<C, S>::handle_append_response with \(\)$
^core/src/raft/replication\.rs:287:22: replace != with == in RaftNode<C, S>::handle_append_response$
^core/src/raft/replication\.rs:295:38: replace \+ with \- in RaftNode<C, S>::handle_append_response$
^core/src/raft/replication\.rs:295:38: replace \+ with \* in RaftNode<C, S>::handle_append_response$
^core/src/raft/replication\.rs:317:71: replace \&\& with \|\| in RaftNode<C, S>::handle_append_response$
^core/src/raft/replication\.rs:317:20: replace \&\& with \|\| in RaftNode<C, S>::handle_append_response$
^core/src/raft/replication\.rs:317:62: replace == with != in RaftNode<C, S>::handle_append_response$
^core/src/raft/replication\.rs:317:74: delete ! in RaftNode<C, S>::handle_append_response$
^core/src/raft/replication\.rs:328:9: replace RaftNode<C, S>::maybe_commit with \(\)$
^core/src/raft/replication\.rs:328:22: replace != with == in RaftNode<C, S>::maybe_commit$
^core/src/raft/replication\.rs:335:28: replace == with != in RaftNode<C, S>::maybe_commit$
^core/src/raft/replication\.rs:341:47: replace \- with \+ in RaftNode<C, S>::maybe_commit$
^core/src/raft/replication\.rs:341:47: replace \- with / in RaftNode<C, S>::maybe_commit$
^core/src/raft/replication\.rs:342:22: replace <= with > in RaftNode<C, S>::maybe_commit$
^core/src/raft/replication\.rs:345:55: replace == with != in RaftNode<C, S>::maybe_commit$
^core/src/raft/replication\.rs:346:25: replace \&\& with \|\| in RaftNode<C, S>::maybe_commit$
^core/src/raft/replication\.rs:346:12: delete ! in RaftNode<C, S>::maybe_commit$
^core/src/raft/replication\.rs:346:28: delete ! in RaftNode<C, S>::maybe_commit$
^core/src/raft/replication\.rs:355:9: replace RaftNode<C, S>::on_leader_commit with \(\)$
^core/src/raft/replication\.rs:362:46: replace \&\& with \|\| in RaftNode<C, S>::on_leader_commit$
^core/src/raft/replication\.rs:362:12: delete ! in RaftNode<C, S>::on_leader_commit$
^core/src/raft/replication\.rs:362:71: replace >= with < in RaftNode<C, S>::on_leader_commit$
^core/src/raft/replication\.rs:368:9: replace RaftNode<C, S>::any_raft_bug \-> bool with true$
^core/src/raft/snapshot\.rs:15:9: replace RaftNode<C, S>::compact_inner with \(\)$
^core/src/raft/snapshot\.rs:15:26: replace <= with > in RaftNode<C, S>::compact_inner$
^core/src/raft/snapshot\.rs:35:9: replace RaftNode<C, S>::send_snapshot with \(\)$
^core/src/raft/snapshot\.rs:48:9: replace RaftNode<C, S>::handle_install_snapshot with \(\)$
^core/src/raft/snapshot\.rs:48:12: delete ! in RaftNode<C, S>::handle_install_snapshot$
^core/src/raft/snapshot\.rs:54:32: replace <= with > in RaftNode<C, S>::handle_install_snapshot$
^core/src/raft/snapshot\.rs:62:69: replace \&\& with \|\| in RaftNode<C, S>::handle_install_snapshot$
^core/src/raft/snapshot\.rs:62:41: replace != with == in RaftNode<C, S>::handle_install_snapshot$
^core/src/raft/snapshot\.rs:62:94: replace > with == in RaftNode<C, S>::handle_install_snapshot$
^core/src/raft/snapshot\.rs:62:94: replace > with < in RaftNode<C, S>::handle_install_snapshot$
^core/src/raft/snapshot\.rs:62:94: replace > with >= in RaftNode<C, S>::handle_install_snapshot$
^core/src/raft/snapshot\.rs:63:54: replace \+ with \- in RaftNode<C, S>::handle_install_snapshot$
^core/src/raft/snapshot\.rs:63:54: replace \+ with \* in RaftNode<C, S>::handle_install_snapshot$
^core/src/raft/snapshot\.rs:64:28: replace <= with > in RaftNode<C, S>::handle_install_snapshot$
^core/src/raft/snapshot\.rs:96:9: replace RaftNode<C, S>::heartbeat_during_snapshot with \(\)$
^core/src/raft/snapshot\.rs:96:38: replace >= with < in RaftNode<C, S>::heartbeat_during_snapshot$
^core/src/raft/snapshot\.rs:96:100: replace / with % in RaftNode<C, S>::heartbeat_during_snapshot$
^core/src/raft/snapshot\.rs:96:100: replace / with \* in RaftNode<C, S>::heartbeat_during_snapshot$
^core/src/raft/snapshot\.rs:99:36: replace match guard !resend_due with true in RaftNode<C, S>::heartbeat_during_snapshot$
^core/src/raft/snapshot\.rs:99:36: replace match guard !resend_due with false in RaftNode<C, S>::heartbeat_during_snapshot$
^core/src/raft/snapshot\.rs:99:36: delete ! in RaftNode<C, S>::heartbeat_during_snapshot$
^core/src/raft/snapshot\.rs:105:9: replace RaftNode<C, S>::handle_install_snapshot_response with \(\)$
^core/src/raft/snapshot\.rs:105:22: replace != with == in RaftNode<C, S>::handle_install_snapshot_response$
^core/src/raft/snapshot\.rs:113:35: replace > with == in RaftNode<C, S>::handle_install_snapshot_response$
^core/src/raft/snapshot\.rs:113:35: replace > with < in RaftNode<C, S>::handle_install_snapshot_response$
^core/src/raft/snapshot\.rs:113:35: replace > with >= in RaftNode<C, S>::handle_install_snapshot_response$
^core/src/raft/snapshot\.rs:115:40: replace \+ with \- in RaftNode<C, S>::handle_install_snapshot_response$
^core/src/raft/snapshot\.rs:115:40: replace \+ with \* in RaftNode<C, S>::handle_install_snapshot_response$
^core/src/raft/transfer\.rs:36:9: replace RaftNode<C, S>::transfer_leadership \-> Result<\(\), TransferError> with Ok\(\(\)\)$
^core/src/raft/transfer\.rs:44:9: replace RaftNode<C, S>::transfer_target \-> Option<NodeId> with None$
^core/src/raft/transfer\.rs:44:9: replace RaftNode<C, S>::transfer_target \-> Option<NodeId> with Some\(Default::default\(\)\)$
^core/src/raft/transfer\.rs:48:9: replace RaftNode<C, S>::start_transfer \-> Result<\(\), TransferError> with Ok\(\(\)\)$
^core/src/raft/transfer\.rs:48:22: replace != with == in RaftNode<C, S>::start_transfer$
^core/src/raft/transfer\.rs:51:19: replace == with != in RaftNode<C, S>::start_transfer$
^core/src/raft/transfer\.rs:54:43: replace \|\| with \&\& in RaftNode<C, S>::start_transfer$
^core/src/raft/transfer\.rs:54:12: delete ! in RaftNode<C, S>::start_transfer$
^core/src/raft/transfer\.rs:54:46: delete ! in RaftNode<C, S>::start_transfer$
^core/src/raft/transfer\.rs:58:32: replace == with != in RaftNode<C, S>::start_transfer$
^core/src/raft/transfer\.rs:60:39: replace \+ with \- in RaftNode<C, S>::start_transfer$
^core/src/raft/transfer\.rs:60:39: replace \+ with \* in RaftNode<C, S>::start_transfer$
^core/src/raft/transfer\.rs:64:12: delete ! in RaftNode<C, S>::start_transfer$
^core/src/raft/transfer\.rs:74:9: replace RaftNode<C, S>::transfer_if_caught_up \-> bool with true$
^core/src/raft/transfer\.rs:74:9: replace RaftNode<C, S>::transfer_if_caught_up \-> bool with false$
^core/src/raft/transfer\.rs:80:84: replace == with != in RaftNode<C, S>::transfer_if_caught_up$
^core/src/raft/transfer\.rs:82:45: delete field sent from struct Transfer expression in RaftNode<C, S>::transfer_if_caught_up$
^core/src/raft/transfer\.rs:91:9: replace RaftNode<C, S>::expire_transfer with \(\)$
^core/src/raft/transfer\.rs:91:54: replace >= with < in RaftNode<C, S>::expire_transfer$
^core/src/raft/transfer\.rs:99:9: replace RaftNode<C, S>::handle_timeout_now with \(\)$
^core/src/raft/transfer\.rs:99:70: replace \|\| with \&\& in RaftNode<C, S>::handle_timeout_now$
^core/src/raft/transfer\.rs:99:38: replace \|\| with \&\& in RaftNode<C, S>::handle_timeout_now$
^core/src/raft/transfer\.rs:99:22: replace == with != in RaftNode<C, S>::handle_timeout_now$
^core/src/raft/transfer\.rs:99:56: replace != with == in RaftNode<C, S>::handle_timeout_now$
^core/src/raft/transfer\.rs:99:73: delete ! in RaftNode<C, S>::handle_timeout_now$
^core/src/raft/types\.rs:161:9: replace Message<C, S>::term \-> Term with Default::default\(\)$
^core/src/raft/types\.rs:240:9: replace Ready<C, S>::is_empty \-> bool with true$
^core/src/raft/types\.rs:240:9: replace Ready<C, S>::is_empty \-> bool with false$
^core/src/raft/types\.rs:246:13: replace \&\& with \|\| in Ready<C, S>::is_empty$
^core/src/raft/types\.rs:245:13: replace \&\& with \|\| in Ready<C, S>::is_empty$
^core/src/raft/types\.rs:244:13: replace \&\& with \|\| in Ready<C, S>::is_empty$
^core/src/raft/types\.rs:243:13: replace \&\& with \|\| in Ready<C, S>::is_empty$
^core/src/raft/types\.rs:242:13: replace \&\& with \|\| in Ready<C, S>::is_empty$
^core/src/raft/types\.rs:241:13: replace \&\& with \|\| in Ready<C, S>::is_empty$
