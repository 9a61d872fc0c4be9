package injection

import "regexp"

// patterns holds each text rule's expressions. They run on normalized
// text (lower case, NFKC, hidden characters dropped, one space between
// words). Each is narrow on purpose: a question that merely mentions a
// password, the system or an instruction must not match; the false-positive
// cases in testdata hold the line.
var patterns = map[Rule][]*regexp.Regexp{
	Override: compile(
		// "ignore all previous instructions", "disregard the above rules"
		`\b(ignore|disregard|forget|override|discard)\b (all |any |every )?(of )?(the |your |my |these |those )?(previous|prior|above|earlier|preceding|former|original|initial|system)( \w+)? (instructions?|prompts?|rules|directions|guidelines|directives|messages|context)\b`,
		// "ignore your instructions", "disregard all instructions"
		`\b(ignore|disregard|forget)\b (all |everything |any )?(of )?(your |the )?(instructions|directives|guidelines|system prompt)\b`,
		`\bforget (everything|all) (you|that|above|before|i)\b`,
		`\b(your|the) (new|real|updated|actual) (instructions|orders|directives|system prompt) (are|is|follow)\b`,
		`\bnew instructions ?:`,
		// 「以前の指示を無視して」「上記のルールをすべて忘れて」
		`(以前|これまで|前|上記|上|先ほど|今まで|元|最初|既存|システム)の(すべての|全ての|全部の)?(指示|命令|ルール|設定|プロンプト|制約|指令)(を|は)(すべて|全て|全部)?(無視|忘れ|破棄|取り消|上書き)`,
		`(指示|命令|プロンプト|指令)(を|は)(すべて|全て|全部)?(無視|忘れ)(して|しろ|せよ|すること|してください)`,
		`新しい(指示|命令|指令)[:は]`,
	),
	Impersonation: compile(
		// a role marker at the start of a line: "system:", "[assistant]:", "### developer:"
		`(?m)^(\[|<|#+ ?|\*\*)?(system|assistant|developer)( message| prompt| note)?(\]|>|\*\*)? ?:`,
		// chat-template tokens
		`<\|?(im_start|im_end|system|endoftext|start_header_id|end_header_id|eot_id)\|?>`,
		`\[/?inst\]|<</?sys>>|</?(system|assistant|developer)>`,
		`\b(you are now|from now on,? you are|pretend (to be|you are)|act as|roleplay as)\b (a |an |the |my )?(system|developer|administrator|admin|root|unrestricted|jailbroken|dan|different (ai|assistant|model))\b`,
		`\b(enable|enter|activate|switch to) (god|dan|jailbreak|developer) mode\b|\bdeveloper mode (is )?(enabled|activated|on)\b`,
		`\b(message|note|instruction|order)s? from (the )?(system|developer|administrator|openai|anthropic|platform)\b ?:`,
		// 「システム:」「あなたは今から管理者として振る舞って」
		`(?m)^(システム|アシスタント|開発者)(メッセージ|プロンプト)? ?:`,
		`(今から|これから|今後)(あなたは|お前は)?.{0,12}(システム|管理者|開発者|制限のない)(として|に)(振る舞|ふるま|行動|なりき|なって)`,
		`(システム|開発者|管理者)(からの)?(メッセージ|指示|命令) ?:`,
		`(開発者|ジェイルブレイク)モード(を)?(有効|オン|起動)`,
	),
	Exfiltration: compile(
		`\b(reveal|send|print|show|share|give|paste|leak|output|tell|e-?mail|post|upload|forward|dump|expose|disclose|repeat|echo|include|(reply|respond|answer) with)\b( me| us)?( all| your| the| any| every| this)?[^.\n?]{0,40}\b(api[ _-]?keys?|(access|round|bearer|auth|refresh|oauth|session) tokens?|your tokens?|secret keys?|private keys?|ssh keys?|system prompt|credentials|env(ironment)? variables|\.env)\b`,
		`\b(reveal|send|print|paste|leak|dump|expose|disclose|e-?mail|upload|forward)\b( me| us)?( all| your| the| any| every)?[^.\n?]{0,30}\bpasswords?\b`,
		// asks to call a tool or run a command for the writer
		`\b(call|invoke|use|run|execute|trigger)\b (the |your )?[a-z0-9]+_[a-z0-9_]+ (tool|function)\b`,
		`\b(run|execute) (this|the following|these) (shell )?(commands?|scripts?|code)\b`,
		`\b(send|post|upload|exfiltrate|forward)\b[^\n]{0,60}\bto (https?://|[a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,})`,
		`\bexfiltrat`,
		// 「APIキーを送って」「システムプロンプトを表示して」
		`(apiキー|api key|トークン|パスワード|認証情報|秘密鍵|システムプロンプト|シークレット|クレデンシャル|環境変数)(を|も)(すべて|全て|全部)?.{0,12}(送|教え|見せ|表示|出力|貼|書き出|漏ら|転送)`,
		`[a-z0-9]+_[a-z0-9_]+ ?(ツール|関数)?を(実行|呼び出)`,
		`(次|以下)の(コマンド|スクリプト|コード)を(実行|走らせ)`,
	),
	FenceEscape: compile(
		`<<< ?data\b|>>> ?end data\b`,
		`</ ?(responsibility_answer|responsibility_question|untrusted[a-z_]*|data|fenced[a-z_]*|tool_result|function_results?|quoted[a-z_]*)>`,
		`<(responsibility_answer|responsibility_question|tool_result|function_results?)\b`,
		"(?m)^```+ ?(system|assistant|developer|instructions?)\\b",
		`\bend of (the )?(untrusted|quoted|fenced) (text|content|data|block)\b`,
		`(引用|データ)(ブロック)?はここまで`,
	),
}

func compile(exprs ...string) []*regexp.Regexp {
	res := make([]*regexp.Regexp, len(exprs))
	for i, e := range exprs {
		res[i] = regexp.MustCompile(e)
	}
	return res
}
