complete -c seqgptd -l bus -d 'The bus to serve' -r -f -a "session\t'The user\'s session bus (one daemon per user; may open paths it is given)'
system\t'The system bus (one daemon per machine, under systemd; descriptors only)'"
complete -c seqgptd -l address -d 'Serve a private bus at this D-Bus address instead (unix sockets only), e.g. unix:path=/run/user/1000/test-bus' -r
complete -c seqgptd -l config -d 'The TOML config file (/etc/seqgpt/seqgptd.toml for the system service). Without it, on the session bus: $XDG_CONFIG_HOME/seqgpt/seqgptd.toml (~/.config/seqgpt/seqgptd.toml) if it exists; else every setting is its default (the extractive summarizer, no model)' -r -F
complete -c seqgptd -l model -d 'The GGUF model file (overrides `model` in the config)' -r -F
complete -c seqgptd -s h -l help -d 'Print help (see more with \'--help\')'
complete -c seqgptd -s V -l version -d 'Print version'
