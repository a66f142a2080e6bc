/* train_opts.c — the options of `qwenchat train`, each with its help, and the
 * command's synopsis and notes (--help; the man page says the same at length). */
#include "src/cli/train_opts.h"

const struct cli_opt train_opts[] = {
	{"out", OPT_OUT, "DIR",
	 "the run's directory: a model every qwenchat\n"
	 "command loads, plus train-state/ (created; new\n"
	 "or empty)"},
	{"resume", OPT_RESUME, "DIR",
	 "continue the run in DIR with its saved options (only\n"
	 "--steps, --eval-every, --eval-tokens, --save-every,\n"
	 "--save-dtype, --threads, --backend, --recompute may\nchange; --val may join a run "
	 "without)"},
	{"init", OPT_INIT, "MODEL",
	 "start from this model's weights: a directory, repo\nid or GGUF file of F32, F16 or BF16 "
	 "tensors\n(with --lora, of any type)"},
	{"tokenizer", OPT_TOKENIZER, "DIR",
	 "the tokenizer (DIR/tokenizer.json, e.g. train-bpe's\noutput) of a model from scratch; "
	 "with --init it\nreplaces the model's"},
	{"layers", OPT_LAYERS, "N", "from scratch: the number of layers"},
	{"hidden-size", OPT_HIDDEN_SIZE, "N", "from scratch: the model's width"},
	{"heads", OPT_HEADS, "N", "from scratch: query heads"},
	{"kv-heads", OPT_KV_HEADS, "N", "from scratch: key/value heads (default --heads)"},
	{"head-dim", OPT_HEAD_DIM, "N",
	 "from scratch: width of a head, even (default\nhidden-size / heads)"},
	{"intermediate-size", OPT_INTERMEDIATE_SIZE, "N",
	 "from scratch: the MLP's width (default 3 x\nhidden-size)"},
	{"tie", OPT_TIE, NULL, "from scratch: the output projection is the embedding\n(default)"},
	{"no-tie", OPT_NO_TIE, NULL, "from scratch: an lm_head of its own"},
	{"rope-theta", OPT_ROPE_THETA, "X", "from scratch: RoPE's base (default 1000000)"},
	{"vocab-size", OPT_VOCAB_SIZE, "N", "from scratch without --tokenizer (*.u32 data only)"},
	{"data", OPT_DATA, "FILE...",
	 "training data: UTF-8 text files (a document each,\nthe end-of-text token appended), "
	 "*.jsonl of\n{\"text\": ...} records (a document each) or *.u32\nfiles of token ids, "
	 "concatenated in the order\ngiven; with --sft, conversations (below)"},
	{"val", OPT_VAL, "FILE...",
	 "held-out data (same forms), evaluated every\n"
	 "--eval-every steps and at the end; with --resume,\nadded to a run that had none"},
	{"ctx", OPT_CTX, "T", "tokens per row (default 256)"},
	{"batch", OPT_BATCH, "B", "rows per micro-batch (default 8)"},
	{"accum", OPT_ACCUM, "A", "micro-batches per step (default 1)"},
	{"steps", OPT_STEPS, "N",
	 "optimizer steps in all (default 1000; 0: write the\ninitial weights and their --val "
	 "loss); with\n--resume, the new total"},
	{"lr", OPT_LR, "X", "peak learning rate (default 6e-4)"},
	{"min-lr", OPT_MIN_LR, "X", "learning rate at the end of the cosine (default\nlr/10)"},
	{"warmup", OPT_WARMUP, "N", "steps of linear warm-up from 0 (default 0)"},
	{"cosine-steps", OPT_COSINE_STEPS, "N",
	 "the step where the cosine reaches --min-lr, not\nbefore --warmup (default --steps, or "
	 "--warmup if\n"
	 "that is longer)"},
	{"weight-decay", OPT_WEIGHT_DECAY, "X",
	 "AdamW's decay of the matrices, not the norms\n(default 0.1)"},
	{"beta1", OPT_BETA1, "X", "AdamW's beta1 (default 0.9)"},
	{"beta2", OPT_BETA2, "X", "AdamW's beta2 (default 0.95)"},
	{"eps", OPT_EPS, "X", "AdamW's epsilon (default 1e-8)"},
	{"clip", OPT_CLIP, "X", "clip the gradients' global norm to X (default 1.0;\n0: off)"},
	{"seed", OPT_SEED, "N", "initial weights and random windows (default 1337)"},
	{"sequential", OPT_SEQUENTIAL, NULL, "read the data in order instead of at random (below)"},
	{"exact", OPT_EXACT, NULL,
	 "every product in fp32 (default: bf16 products with\nfp32 sums where the backend has fast "
	 "bf16 kernels)"},
	{"recompute", OPT_RECOMPUTE, NULL,
	 "keep one layer's activations and recompute the\nothers in the backward: less memory, "
	 "more time"},
	{"eval-every", OPT_EVAL_EVERY, "N", "evaluate --val every N steps (default 100)"},
	{"eval-tokens", OPT_EVAL_TOKENS, "N",
	 "evaluate only the first N tokens of --val: the\nfirst ceil(N / ctx) windows (rows with "
	 "--sft)\n(default 0: all of it)"},
	{"save-every", OPT_SAVE_EVERY, "N",
	 "write a checkpoint every N steps (default 500)\n"
	 "and at the end"},
	{"save-dtype", OPT_SAVE_DTYPE, "T",
	 "f32 (default) or bf16: model.safetensors rounded to\nnearest even (the f32 weights go to "
	 "train-state/)"},
	{"backend", OPT_BACKEND, "B", "auto, cpu or cuda (default auto)"},
	{"threads", OPT_THREADS, "N",
	 "CPU threads (default: every CPU; a resumed run\n"
	 "repeats an uninterrupted one bit for bit with\n"
	 "the same count)"},
	{"sft", OPT_SFT, NULL,
	 "supervised fine-tuning: --data and --val are\nconversations, the loss is on what the "
	 "assistant\nwrites (below)"},
	{"pack", OPT_PACK, NULL,
	 "--sft: several conversations a row, each attending\nonly to itself (below)"},
	{"lora", OPT_LORA, "R",
	 "with --init: train rank-R LoRA adapters of the\nmodel's matrices instead of its weights "
	 "(below)"},
	{"lora-alpha", OPT_LORA_ALPHA, "X",
	 "LoRA's alpha: the adapters' output is scaled by\nalpha / R (default R)"},
	{"lora-targets", OPT_LORA_TARGETS, "LIST",
	 "the matrices LoRA adapts, of q,k,v,o,gate,up,down\n(default all of them)"},
	{"lora-init", OPT_LORA_INIT, "DIR",
	 "with --init: start from the PEFT LoRA adapter in DIR\n(its rank, alpha and targets) "
	 "instead of new\nadapters; with --steps 0, its merged model"},
	{"no-panel", OPT_NO_PANEL, NULL,
	 "on a terminal, the progress as one line rewritten\nin place instead of the live panel"},
	{0},
};

const struct cli_command train_cmd = {
	.name = "train",
	.synopsis = "--out DIR --data FILE... [--init MODEL |\n"
		    "       --tokenizer DIR --layers N --hidden-size N --heads N ...] [options]\n"
		    "   or: qwenchat train --resume DIR [--steps N]",
	.about =
		"Trains a Qwen3 model with AdamW, from a model's weights (--init) or from\n"
		"scratch (random N(0, 0.02) weights of the shape given), and writes checkpoints\n"
		"to DIR: config.json, model.safetensors, the tokenizer and generation files (a\n"
		"model every qwenchat command loads) and train-state/ (moments, options,\n"
		"position, log) to resume from. Before the first step the memory plan is printed;\n"
		"a plan that does not fit the machine's memory is refused (on the CPU the\n"
		"attention probabilities are made again in the backward; --recompute is turned\n"
		"on when only that fits).\n",
	.opts = train_opts,
	.notes =
		"Each step averages the cross-entropy over every target of its --accum\n"
		"micro-batches of --batch rows of --ctx tokens, clips the gradients' norm to\n"
		"--clip, and takes one AdamW step (decay on the matrices only) at the rate\n"
		"  lr(s) = s / warmup * lr                              for s < warmup\n"
		"        = min_lr + (1 + cos(pi (s - warmup) / (cosine_steps - warmup)))\n"
		"                   / 2 * (lr - min_lr)              up to s = cosine_steps\n"
		"        = min_lr                                      after\n"
		"for steps s = 0, 1, ... (with cosine_steps = warmup there is no cosine: step\n"
		"warmup runs at lr, the steps after at min_lr). A row's inputs are the stream's\n"
		"tokens [o, o+T) and its targets [o+1, o+T+1). By default o is drawn uniformly\n"
		"from [0, len - T - 1] for each row from a generator seeded by --seed and saved\n"
		"with each checkpoint.\n"
		"With --sequential, row b of micro-batch a of step s reads window\n"
		"k = ((s*A + a)*B + b) mod W at o = k*T, where W = floor((len - 1) / T) is the\n"
		"number of whole windows: the stream is read in order and, once its last whole\n"
		"window is read, again from the start (the tokens after that window are never\n"
		"read). The streams are cached in DIR/train-state/ (data.u32, val.u32).\n"
		"A resumed run keeps its saved schedule, but where --cosine-steps was left to\n"
		"its default a resume with another --steps takes the cosine of a run started\n"
		"with that --steps if every step taken so far was in the warm-up (at most its\n"
		"last step): a run of 2 steps with --warmup 2 resumed to --steps 4 repeats 4\n"
		"steps in one run bit for bit. Otherwise the steps taken followed the saved\n"
		"cosine and it stays: a longer --steps goes on at min_lr, a shorter one ends\n"
		"above it (a notice gives the last step's learning rate).\n"
		"\n"
		"DIR/train-log.jsonl has one object per step (step, counting from 1, with its\n"
		"loss, grad_norm, lr, tokens (the targets trained on so far) and seconds) and per\n"
		"evaluation (step, val_loss, val_ppl); DIR/loss.svg draws both curves. On a\n"
		"terminal the progress is a live panel redrawn in place below the messages: a\n"
		"progress bar, the loss and validation loss, the training loss and the learning\n"
		"rate drawn as curves over the run so far, the elapsed time and the ETA,\n"
		"tokens/s, the share of the machine's measured matrix-product rate, the gradient\n"
		"norm, the last checkpoint and evaluation. With --no-panel it is one line\n"
		"rewritten in place; when stderr is not a terminal, or TERM is unset, dumb or\n"
		"unknown, a plain line per step.\n"
		"A checkpoint is written beside the previous one and renamed into place: a crash\n"
		"or a full disk leaves the previous one whole. SIGINT (Ctrl-C), SIGTERM or\n"
		"SIGHUP (a closed terminal; ignored under nohup) finishes the step under way\n"
		"(an evaluation under way is abandoned), saves it and exits 130, 143 or 129,\n"
		"the panel left on screen as it last was (a second one stops at once, saying\n"
		"which step's checkpoint DIR holds).\n"
		"A loss or gradient norm that is not finite stops the run (exit 1) without saving\n"
		"it. A file name after --data or --val that starts with '-' is written ./-NAME.\n"
		"\n"
		"--sft: each file of --data and --val holds conversations: JSON Lines (*.jsonl,\n"
		"or any file with more than one JSON value, one a line) of {\"messages\": [...]}\n"
		"objects in OpenAI's form (roles system, user, assistant, tool; content; an\n"
		"assistant's reasoning_content and tool_calls; \"tools\" beside \"messages\"), of\n"
		"ShareGPT or of Alpaca records (also as one JSON array of them), or one\n"
		"conversation as the chat's /save writes it, or plain text (*.txt, *.md): each\n"
		"non-blank line (a paragraph) asked and the next one answered, so that a model\n"
		"trained from text learns where a turn ends. A UTF-8 byte-order mark at a file's\n"
		"start is skipped. Each is rendered whole with the model's chat template as the\n"
		"chat renders it (with the Qwen3 template an answer after the last user message\n"
		"shows its reasoning in <think>...</think>, an empty block when it has none;\n"
		"answers before it show no reasoning) and tokenized as the chat tokenizes its\n"
		"prompt (the template's markers are control tokens, the messages' text is\n"
		"literal). The loss covers only what the assistant writes: for each assistant\n"
		"message the tokens after <|im_start|>assistant\\n through its <|im_end|> (an\n"
		"answer is tokenized apart from the text before it, as the chat's generation\n"
		"prompt ends there); every other token is context. Each conversation is one row,\n"
		"padded to --ctx (the padding is never attended to by the conversation and never\n"
		"scored). What follows its last answer (a question left unanswered) is never a\n"
		"target and is dropped. A conversation whose answers end past --ctx + 1 tokens is\n"
		"cut after its last answer that fits (counted as cut); one whose first answer\n"
		"does not fit, and one without an answer, is left out; the counts are printed.\n"
		"Rows are drawn as windows are: a conversation uniformly at random, or with\n"
		"--sequential conversation k = ((s*A + a)*B + b) mod N of the N in the files'\n"
		"order. The loss of a step is the mean over the answer tokens of its rows. The\n"
		"cache keeps each token's flags in DIR/train-state/data.sft beside data.u32.\n"
		"\n"
		"--pack (with --sft) puts several conversations in a row instead of padding\n"
		"each row: they are packed once, first-fit decreasing (the longest first, each\n"
		"into the first row with room for it, or a new one), and each attends only to\n"
		"itself, at positions from 0, as Hugging Face's padding-free packing does: a\n"
		"packed row computes what its conversations would in rows of their own, with\n"
		"less padding. Rows of packed conversations are drawn, read in order and\n"
		"evaluated as conversations are without it.\n"
		"\n"
		"--lora R (with --init) freezes every weight of the model and trains, for each\n"
		"matrix W (out x in) of --lora-targets in every layer, a pair A (R x in) and B\n"
		"(out x R), as PEFT's LoRA does: the product x W^T becomes x W^T +\n"
		"(alpha / R) (x A^T) B^T. A starts uniform in +-1/sqrt(in) (seeded by --seed), B\n"
		"at zero, so that step 0 is the model itself; the gradient norm, clipping and\n"
		"AdamW (decay included) cover the adapters alone. It runs on the CPU backend.\n"
		"DIR/model.safetensors holds the weights with the adapters merged (W + alpha / R\n"
		"B A), a model every command loads; DIR/train-state/ is also PEFT's adapter\n"
		"directory (adapter_config.json, adapter_model.safetensors in F32), which\n"
		"PeftModel.from_pretrained puts on the base model. A resume reads the frozen\n"
		"weights from --init again and refuses them if they changed.\n",
	.max_args = 0,
};
