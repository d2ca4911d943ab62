# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_seqgpt_global_optspecs
    string join \n h/help V/version
end

function __fish_seqgpt_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_seqgpt_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_seqgpt_using_subcommand
    set -l cmd (__fish_seqgpt_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c seqgpt -n "__fish_seqgpt_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c seqgpt -n "__fish_seqgpt_needs_command" -s V -l version -d 'Print version'
complete -c seqgpt -n "__fish_seqgpt_needs_command" -f -a "summarize" -d 'Summarize a PDF: ask the seqgptd daemon over D-Bus, or run in this process with --local'
complete -c seqgpt -n "__fish_seqgpt_needs_command" -f -a "show" -d 'Show a PDF\'s summary in the reader: its sentences highlighted where they stand (zathura live; Okular and Evince through an annotated copy), printed numbered'
complete -c seqgpt -n "__fish_seqgpt_needs_command" -f -a "jobs" -d 'List your jobs on the daemon, wait for one (reattach) or cancel one'
complete -c seqgpt -n "__fish_seqgpt_needs_command" -f -a "classify" -d 'Ask the daemon\'s model which of some labels apply to a text'
complete -c seqgpt -n "__fish_seqgpt_needs_command" -f -a "extract" -d 'Ask the daemon\'s model for the spans of a text of each kind (people, places, ...)'
complete -c seqgpt -n "__fish_seqgpt_needs_command" -f -a "extract-text" -d 'Print a PDF\'s text, pages separated by form feeds'
complete -c seqgpt -n "__fish_seqgpt_needs_command" -f -a "generate" -d 'Generate text from a prompt (or a batch of prompts)'
complete -c seqgpt -n "__fish_seqgpt_needs_command" -f -a "logits" -d 'Print the last position\'s logits for a prompt as JSON'
complete -c seqgpt -n "__fish_seqgpt_needs_command" -f -a "bench" -d 'Measure open time, prefill/decode speed and memory on synthetic prompts'
complete -c seqgpt -n "__fish_seqgpt_needs_command" -f -a "info" -d 'Show the device, its memory, the Jetson model and a model\'s placement plan'
complete -c seqgpt -n "__fish_seqgpt_needs_command" -f -a "model" -d 'Model files: `seqgpt model check FILE` says what seqgptd would do with one'
complete -c seqgpt -n "__fish_seqgpt_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand summarize" -l model -d 'With --local: the GGUF model (without it, the extractive summarizer)' -r -F
complete -c seqgpt -n "__fish_seqgpt_using_subcommand summarize" -l device -d 'With --local: auto, cpu or cuda:N' -r
complete -c seqgpt -n "__fish_seqgpt_using_subcommand summarize" -l threads -d 'With --local: CPU threads (0 = all cores)' -r
complete -c seqgpt -n "__fish_seqgpt_using_subcommand summarize" -l config -d 'With --local: a seqgptd config file (model, templates, cache)' -r -F
complete -c seqgpt -n "__fish_seqgpt_using_subcommand summarize" -l pages -d 'Pages to summarize: N or A-B (1-based)' -r
complete -c seqgpt -n "__fish_seqgpt_using_subcommand summarize" -l password -d 'Password of an encrypted PDF (visible to other local users in the process list: prefer --password-file)' -r
complete -c seqgpt -n "__fish_seqgpt_using_subcommand summarize" -l password-file -d 'Read the PDF\'s password from FILE ("-": standard input), its first line' -r -F
complete -c seqgpt -n "__fish_seqgpt_using_subcommand summarize" -l length -d 'The summary\'s length: short, medium or long (60, 120, 250 words; a CJK character counts as a word). --max-words overrides it' -r -f -a "short\t''
medium\t''
long\t''"
complete -c seqgpt -n "__fish_seqgpt_using_subcommand summarize" -l max-words -d 'The most words the summary may have (a CJK character counts as one). An extractive summary fills at least 85% of it, in whole sentences, when the document has that much prose' -r
complete -c seqgpt -n "__fish_seqgpt_using_subcommand summarize" -l language -d 'The summary\'s language: auto follows the document' -r -f -a "auto\t''
en\t''
zh\t''
ja\t''
ko\t''"
complete -c seqgpt -n "__fish_seqgpt_using_subcommand summarize" -l style -d 'One paragraph, or one bullet ("- ") per sentence' -r -f -a "paragraph\t'Running text'
bullets\t'One sentence per line, each starting with "- "'"
complete -c seqgpt -n "__fish_seqgpt_using_subcommand summarize" -l method -d 'auto: the model when one is loaded; model: fail without one; extractive: never the model' -r -f -a "auto\t'The model when one is loaded, else the extractive ranker'
model\t'The model; `ModelUnavailable` when none is loaded'
extractive\t'The extractive ranker, even when a model is loaded (fast)'"
complete -c seqgpt -n "__fish_seqgpt_using_subcommand summarize" -l annotate -d 'Also write a copy of the PDF with each summary sentence highlighted where it stands and a note holding the whole summary (standard annotations, appended to the original bytes: any PDF reader shows them). Extractive summaries only: a model\'s own words stand nowhere in the document' -r -F
complete -c seqgpt -n "__fish_seqgpt_using_subcommand summarize" -l address -d 'Ask the daemon on this D-Bus address (unix:path=...)' -r
complete -c seqgpt -n "__fish_seqgpt_using_subcommand summarize" -l timeout -d 'Give up after this many seconds (0: wait as long as it takes)' -r
complete -c seqgpt -n "__fish_seqgpt_using_subcommand summarize" -l text -d 'FILE is plain UTF-8 text (form feeds separate pages), not a PDF'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand summarize" -l local -d 'Run the pipeline in this process instead of asking the daemon'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand summarize" -l no-cache -d 'Do not use the daemon\'s summary cache'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand summarize" -l json -d 'Print one JSON object: {"summary", "method", "sentences", "stats", "job"}; "sentences" says where each sentence of the summary stands: {"text", "page", "start", "end", "boxes"} (docs/SUMMARIZE.md)'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand summarize" -l explain -d 'With --local: print, instead of the summary, why the extractive summary is what it is: every block with its kind and section, every sentence with its features and score (JSON)'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand summarize" -l system -d 'Ask the daemon on the system bus (the default when it is installed and this user may call it)'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand summarize" -l session -d 'Ask the user\'s own daemon on the session bus, even where a system service runs'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand summarize" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand show" -l goto -d 'Go to the page of summary sentence N (from 1)' -r
complete -c seqgpt -n "__fish_seqgpt_using_subcommand show" -l reader -d 'The reader: auto (a zathura that shows the file, else the first installed of zathura, okular, evince), or one of them' -r -f -a "zathura\t''
okular\t''
evince\t''"
complete -c seqgpt -n "__fish_seqgpt_using_subcommand show" -l annotate -d 'Where the annotated copy goes (default: the user\'s cache, ~/.cache/seqgpt/annotated/)' -r -F
complete -c seqgpt -n "__fish_seqgpt_using_subcommand show" -l zathura-config -d 'A zathura configuration folder (its zathurarc sets the highlight colours) for a zathura this command starts' -r -F
complete -c seqgpt -n "__fish_seqgpt_using_subcommand show" -l pages -d 'Pages to summarize: N or A-B (1-based)' -r
complete -c seqgpt -n "__fish_seqgpt_using_subcommand show" -l password-file -d 'Read the PDF\'s password from FILE ("-": standard input), its first line' -r -F
complete -c seqgpt -n "__fish_seqgpt_using_subcommand show" -l length -d 'The summary\'s length: short, medium or long' -r -f -a "short\t''
medium\t''
long\t''"
complete -c seqgpt -n "__fish_seqgpt_using_subcommand show" -l language -d 'The summary\'s language: auto follows the document' -r -f -a "auto\t''
en\t''
zh\t''
ja\t''
ko\t''"
complete -c seqgpt -n "__fish_seqgpt_using_subcommand show" -l method -d 'auto: the model when one is loaded; extractive: never the model (a model\'s own words stand nowhere in the document, so only quoted sentences can be shown)' -r -f -a "auto\t'The model when one is loaded, else the extractive ranker'
model\t'The model; `ModelUnavailable` when none is loaded'
extractive\t'The extractive ranker, even when a model is loaded (fast)'"
complete -c seqgpt -n "__fish_seqgpt_using_subcommand show" -l address -d 'Ask the daemon on this D-Bus address (unix:path=...)' -r
complete -c seqgpt -n "__fish_seqgpt_using_subcommand show" -l timeout -d 'Give up on the summary after this many seconds (0: wait as long as it takes)' -r
complete -c seqgpt -n "__fish_seqgpt_using_subcommand show" -l no-start -d 'Print the sentences and write the copy, but start no reader: a zathura that shows the file is still told to show the copy; fail when zathura is asked for and none shows it'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand show" -l local -d 'Summarize in this process instead of asking the daemon'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand show" -l system -d 'Ask the daemon on the system bus (the default when it is installed and this user may call it)'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand show" -l session -d 'Ask the user\'s own daemon on the session bus, even where a system service runs'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand show" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand jobs" -l wait -d 'Wait for this job to end and print its summary (or its error)' -r
complete -c seqgpt -n "__fish_seqgpt_using_subcommand jobs" -l cancel -d 'Cancel this job' -r
complete -c seqgpt -n "__fish_seqgpt_using_subcommand jobs" -l address -d 'Ask the daemon on this D-Bus address (unix:path=...)' -r
complete -c seqgpt -n "__fish_seqgpt_using_subcommand jobs" -l json -d 'Print JSON: the list as [{"job", "state"}], a waited job as `seqgpt summarize --json`'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand jobs" -l system -d 'Ask the daemon on the system bus (the default when it is installed and this user may call it)'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand jobs" -l session -d 'Ask the user\'s own daemon on the session bus, even where a system service runs'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand jobs" -s h -l help -d 'Print help'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand classify" -l labels -d 'The labels to choose from, comma-separated (e.g. "positive,negative")' -r
complete -c seqgpt -n "__fish_seqgpt_using_subcommand classify" -l address -d 'Ask the daemon on this D-Bus address (unix:path=...)' -r
complete -c seqgpt -n "__fish_seqgpt_using_subcommand classify" -l json -d 'Print JSON: {"labels", "answer"} (the model\'s raw answer too)'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand classify" -l system -d 'Ask the daemon on the system bus (the default when it is installed and this user may call it)'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand classify" -l session -d 'Ask the user\'s own daemon on the session bus, even where a system service runs'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand classify" -s h -l help -d 'Print help'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand extract" -l kinds -d 'The kinds of span to find, comma-separated (e.g. "person,city", "人名,地名")' -r
complete -c seqgpt -n "__fish_seqgpt_using_subcommand extract" -l address -d 'Ask the daemon on this D-Bus address (unix:path=...)' -r
complete -c seqgpt -n "__fish_seqgpt_using_subcommand extract" -l json -d 'Print JSON: {"spans": {kind: [span]}, "answer"}'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand extract" -l system -d 'Ask the daemon on the system bus (the default when it is installed and this user may call it)'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand extract" -l session -d 'Ask the user\'s own daemon on the session bus, even where a system service runs'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand extract" -s h -l help -d 'Print help'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand extract-text" -l pages -d 'Pages to extract, 1-based and inclusive: `A-B`, `A-` (to the end) or `A`' -r
complete -c seqgpt -n "__fish_seqgpt_using_subcommand extract-text" -l password -d 'Password of an encrypted PDF (user or owner password)' -r
complete -c seqgpt -n "__fish_seqgpt_using_subcommand extract-text" -s h -l help -d 'Print help'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand generate" -l model -d 'The GGUF model file' -r -F
complete -c seqgpt -n "__fish_seqgpt_using_subcommand generate" -l device -d 'auto, cpu or cuda:N' -r
complete -c seqgpt -n "__fish_seqgpt_using_subcommand generate" -l threads -d 'Worker threads for the CPU kernels (0 = all cores)' -r
complete -c seqgpt -n "__fish_seqgpt_using_subcommand generate" -l prompt -d 'The prompt text' -r
complete -c seqgpt -n "__fish_seqgpt_using_subcommand generate" -l prompts-file -d 'A file with one JSON string per line; all run as one batch' -r -F
complete -c seqgpt -n "__fish_seqgpt_using_subcommand generate" -l max-new-tokens -d 'The most tokens to generate per prompt' -r
complete -c seqgpt -n "__fish_seqgpt_using_subcommand generate" -l temperature -d 'Sample with this temperature (0 and up) instead of greedy decoding' -r
complete -c seqgpt -n "__fish_seqgpt_using_subcommand generate" -l top-k -d 'When sampling: only among the K most likely tokens' -r
complete -c seqgpt -n "__fish_seqgpt_using_subcommand generate" -l top-p -d 'When sampling: only among the most likely tokens whose probabilities add up to P (0 < P <= 1)' -r
complete -c seqgpt -n "__fish_seqgpt_using_subcommand generate" -l seed -d 'When sampling: the random seed (the same seed gives the same text)' -r
complete -c seqgpt -n "__fish_seqgpt_using_subcommand generate" -l repetition-penalty -d '1.0 = off (SeqGPT\'s own setting is 2.0)' -r
complete -c seqgpt -n "__fish_seqgpt_using_subcommand generate" -l stop -d 'Stop when the generated text contains this (repeatable)' -r
complete -c seqgpt -n "__fish_seqgpt_using_subcommand generate" -l num-beams -d 'Beam search with this many beams (1: no beam search)' -r
complete -c seqgpt -n "__fish_seqgpt_using_subcommand generate" -l greedy -d 'Greedy decoding (the default unless --temperature is given)'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand generate" -l ignore-eos -d 'Do not stop at the end-of-sequence token'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand generate" -l json -d 'One JSON object per prompt: {"ids": [...], "text": "..."}'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand generate" -s h -l help -d 'Print help'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand logits" -l model -d 'The GGUF model file' -r -F
complete -c seqgpt -n "__fish_seqgpt_using_subcommand logits" -l device -d 'auto, cpu or cuda:N' -r
complete -c seqgpt -n "__fish_seqgpt_using_subcommand logits" -l threads -d 'Worker threads for the CPU kernels (0 = all cores)' -r
complete -c seqgpt -n "__fish_seqgpt_using_subcommand logits" -l prompt -d 'The prompt (or --prompts-file)' -r
complete -c seqgpt -n "__fish_seqgpt_using_subcommand logits" -l prompts-file -d 'One JSON string per line; prints one JSON object per line, in order' -r -F
complete -c seqgpt -n "__fish_seqgpt_using_subcommand logits" -l top -d 'Only the N largest logits (`top_ids`, `top_logits`)' -r
complete -c seqgpt -n "__fish_seqgpt_using_subcommand logits" -l json -d 'Print JSON (the only format; accepted for symmetry with `generate`)'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand logits" -s h -l help -d 'Print help'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand bench" -l model -d 'The GGUF model file' -r -F
complete -c seqgpt -n "__fish_seqgpt_using_subcommand bench" -l device -d 'auto, cpu or cuda:N' -r
complete -c seqgpt -n "__fish_seqgpt_using_subcommand bench" -l threads -d 'Worker threads for the CPU kernels (0 = all cores)' -r
complete -c seqgpt -n "__fish_seqgpt_using_subcommand bench" -l prompt-tokens -d 'Prompt lengths to measure (comma-separated)' -r
complete -c seqgpt -n "__fish_seqgpt_using_subcommand bench" -l gen-tokens -d 'Tokens to decode per run' -r
complete -c seqgpt -n "__fish_seqgpt_using_subcommand bench" -l batch -d 'Batch sizes to measure (comma-separated)' -r
complete -c seqgpt -n "__fish_seqgpt_using_subcommand bench" -l repeat -d 'Repeat each measurement and keep the best (noise on shared machines)' -r
complete -c seqgpt -n "__fish_seqgpt_using_subcommand bench" -l json -d 'Print one JSON object (the fields above) instead of a table'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand bench" -s h -l help -d 'Print help'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand info" -l device -d 'auto, cpu or cuda:N' -r
complete -c seqgpt -n "__fish_seqgpt_using_subcommand info" -l model -d 'A model file whose placement plan to print' -r -F
complete -c seqgpt -n "__fish_seqgpt_using_subcommand info" -l json -d 'Print JSON instead of text'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand info" -s h -l help -d 'Print help'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand model; and not __fish_seen_subcommand_from check help" -s h -l help -d 'Print help'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand model; and not __fish_seen_subcommand_from check help" -f -a "check" -d 'Say what seqgptd would do with a GGUF model file: load it or not, its architecture, size and quantization, the template it would pick, where it would run'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand model; and not __fish_seen_subcommand_from check help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand model; and __fish_seen_subcommand_from check" -l config -d 'Decide as the daemon with this config would (its device, threads and templates); default: the built-in defaults' -r -F
complete -c seqgpt -n "__fish_seqgpt_using_subcommand model; and __fish_seen_subcommand_from check" -l device -d 'auto, cpu or cuda:N (overrides the config\'s `device`)' -r
complete -c seqgpt -n "__fish_seqgpt_using_subcommand model; and __fish_seen_subcommand_from check" -l json -d 'Print JSON instead of text'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand model; and __fish_seen_subcommand_from check" -s h -l help -d 'Print help'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand model; and __fish_seen_subcommand_from help" -f -a "check" -d 'Say what seqgptd would do with a GGUF model file: load it or not, its architecture, size and quantization, the template it would pick, where it would run'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand model; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand help; and not __fish_seen_subcommand_from summarize show jobs classify extract extract-text generate logits bench info model help" -f -a "summarize" -d 'Summarize a PDF: ask the seqgptd daemon over D-Bus, or run in this process with --local'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand help; and not __fish_seen_subcommand_from summarize show jobs classify extract extract-text generate logits bench info model help" -f -a "show" -d 'Show a PDF\'s summary in the reader: its sentences highlighted where they stand (zathura live; Okular and Evince through an annotated copy), printed numbered'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand help; and not __fish_seen_subcommand_from summarize show jobs classify extract extract-text generate logits bench info model help" -f -a "jobs" -d 'List your jobs on the daemon, wait for one (reattach) or cancel one'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand help; and not __fish_seen_subcommand_from summarize show jobs classify extract extract-text generate logits bench info model help" -f -a "classify" -d 'Ask the daemon\'s model which of some labels apply to a text'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand help; and not __fish_seen_subcommand_from summarize show jobs classify extract extract-text generate logits bench info model help" -f -a "extract" -d 'Ask the daemon\'s model for the spans of a text of each kind (people, places, ...)'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand help; and not __fish_seen_subcommand_from summarize show jobs classify extract extract-text generate logits bench info model help" -f -a "extract-text" -d 'Print a PDF\'s text, pages separated by form feeds'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand help; and not __fish_seen_subcommand_from summarize show jobs classify extract extract-text generate logits bench info model help" -f -a "generate" -d 'Generate text from a prompt (or a batch of prompts)'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand help; and not __fish_seen_subcommand_from summarize show jobs classify extract extract-text generate logits bench info model help" -f -a "logits" -d 'Print the last position\'s logits for a prompt as JSON'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand help; and not __fish_seen_subcommand_from summarize show jobs classify extract extract-text generate logits bench info model help" -f -a "bench" -d 'Measure open time, prefill/decode speed and memory on synthetic prompts'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand help; and not __fish_seen_subcommand_from summarize show jobs classify extract extract-text generate logits bench info model help" -f -a "info" -d 'Show the device, its memory, the Jetson model and a model\'s placement plan'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand help; and not __fish_seen_subcommand_from summarize show jobs classify extract extract-text generate logits bench info model help" -f -a "model" -d 'Model files: `seqgpt model check FILE` says what seqgptd would do with one'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand help; and not __fish_seen_subcommand_from summarize show jobs classify extract extract-text generate logits bench info model help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c seqgpt -n "__fish_seqgpt_using_subcommand help; and __fish_seen_subcommand_from model" -f -a "check" -d 'Say what seqgptd would do with a GGUF model file: load it or not, its architecture, size and quantization, the template it would pick, where it would run'
