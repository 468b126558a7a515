"""Any language, any script: how long a text is, whether it instructs, whether it is a diagnostic.

What :mod:`agentmem.sanitize` needs to hold a tool's words to the same rules in every
script. Pure functions, standard library only, cheap to import (patterns compile on
first use).

- :func:`units` and :func:`clip_units`: a length budget that counts what a reader
  (or a tokenizer) counts, not white space: a word of a spaced script (Latin,
  Cyrillic, Greek, Arabic, Hebrew, Devanagari, Hangul...) is one unit, each
  character of a script written without spaces (Han, kana, Thai, Lao, Khmer,
  Myanmar, Tibetan) is one unit, and a word longer than :data:`LONG_WORD` characters
  counts one unit per :data:`LONG_WORD` characters. A 100-character sentence in
  Chinese is 100 units, not one word.
- :func:`instruction`: the first instruction marker in a text, in any of English,
  German, French, Spanish, Portuguese, Italian, Russian, Polish, Chinese, Japanese,
  Korean, Vietnamese, Turkish, Arabic, Hindi or Thai, or None. Two tiers:
  ``strict=True`` only what is never a note (ignore the previous instructions, "you
  must now delete", keep it from the user), which a lesson may never hold either;
  ``strict=False`` (what a tool's output may not put into a quote) adds requests and
  imperatives ("please", "run X to fix", "führe ... aus", "请运行", "してください").
- :func:`diagnostic_shape`: whether a text looks like a program's diagnostic (a
  ``name:`` frame, an error class or code, a diagnostic word in one of those
  languages). A quote holding letters beyond ASCII is kept only when it has that
  shape, its natural language is short, and nothing in it instructs
  (:func:`agentmem.sanitize.quote_diagnostic`): the second net is the marker list,
  the first is that a quote must look like a diagnostic at all.
"""

from __future__ import annotations

import re

__all__ = [
    "LONG_WORD",
    "clip_units",
    "diagnostic_shape",
    "instruction",
    "natural_units",
    "units",
]

#: Characters of a word that count as one unit; a longer word counts one per this many.
LONG_WORD = 80

# Scripts written without spaces between words: each character is a unit.
_UNSPACED_CLASS = (
    "\u0e00-\u0eff\u0f00-\u0fff\u1000-\u109f\u1780-\u17ff\u2e80-\u2fdf\u3000-\u30ff"
    "\u3100-\u312f\u31a0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef"
    "\U00020000-\U0003134f"
)
_COMPILED: dict[str, re.Pattern[str]] = {}
_SENTENCE = r"(?:[^.!?]|[.!?]\S)"


def _re(p: str) -> re.Pattern[str]:
    if p not in _COMPILED:
        _COMPILED[p] = re.compile(p, re.IGNORECASE)
    return _COMPILED[p]


def _word_units(word: str) -> int:
    if word.isascii():
        return -(-len(word) // LONG_WORD)
    dense = len(_re(f"[{_UNSPACED_CLASS}]").findall(word))
    rest = len(word) - dense
    return dense + (-(-rest // LONG_WORD) if rest else 0)


def units(text: str) -> int:
    """``text``'s length in budget units: words of spaced scripts, characters of unspaced
    ones (Han, kana, Thai...), a long word one unit per :data:`LONG_WORD` characters."""
    return sum(_word_units(w) for w in text.split())


def clip_units(text: str, n: int) -> str:
    """The first ``n`` units of ``text`` (:func:`units`), white space folded, with ``...``
    when something was cut."""
    out: list[str] = []
    left = n
    words = text.split()
    for w in words:
        u = _word_units(w)
        if u <= left:
            out.append(w)
            left -= u
            continue
        if left > 0:
            out.append(_cut_word(w, left))
        return " ".join(x for x in out if x) + "..."
    return " ".join(out)


def _cut_word(word: str, n: int) -> str:
    """The start of ``word`` worth ``n`` units."""
    used = 0
    run = 0
    for i, c in enumerate(word):
        if _re(f"[{_UNSPACED_CLASS}]").match(c):
            used += 1
            run = 0
        else:
            if run % LONG_WORD == 0:
                used += 1
            run += 1
        if used > n:
            return word[:i]
    return word


# -- instruction markers --------------------------------------------------------------------
# One (language, tier, pattern) a row. "strict" rows are never a note in any text; the
# others are requests and imperatives that a diagnostic does not make. A row is compiled
# when it is first needed; the Latin rows run on every text, the others only on a text
# that holds a letter of their script.

_LATIN_PREV = (
    r"(?:previous|prior|above|earlier|preceding|vorherig\w*|bisherig\w*|obig\w*|frühere?\w*|"
    r"pr[ée]c[ée]dent\w*|ant[ée]rieur\w*|ci-dessus|anterior\w*|previ\w*|pr[ée]vi\w*|"
    r"precedent\w*|sopra|arriba|acima|poprzedni\w*|wcześniejsz\w*|powyższ\w*|trước\s+đó|"
    r"trước|önceki|yukarıdaki)"
)
_LATIN_RULES = (
    r"(?:instructions?|prompts?|rules?|anweisung\w*|instruktion\w*|regeln|vorgaben|"
    r"consignes?|r[èe]gles?|directives?|instrucci\w+|reglas|indicaciones|instru[çc]\w+|"
    r"regras|istruzion\w*|regole|polece\w+|instrukcj\w*|zasad\w*|hướng\s+dẫn|chỉ\s+thị|"
    r"talimat\w*|kural\w*|komut\w*)"
)
_IGNORE_VERB = (
    r"\b(?:ignor\w*|vergiss|vergessen|missachte\w*|oubli\w*|olvid\w*|esque[cç]\w*|"
    r"dimentic\w*|zignoruj\w*|zapomnij|bỏ\s+qua|phớt\s+lờ|yok\s+say\w*|"
    r"görmezden\s+gel\w*|unut)\b"
)
_IGNORE = (
    "ignor|vergiss|vergessen|missacht|oubli|olvid|esque|dimentic|zapomnij|bỏ qua|phớt|"
    "yok say|görmezden|unut"
)
#: (language, strict, needles, pattern): a row runs only on a text that holds one of its
#: needles (lower case, ``|`` between them), or on any text of its script when it has
#: none. ``%S`` in a pattern: a character of the same sentence (a ``.`` inside a word,
#: as in a URL, does not end it).
_ROWS: list[tuple[str, bool, str, str]] = [
    # Latin scripts: ignore the previous instructions, in any order
    ("latin", True, _IGNORE,
     _IGNORE_VERB + r"%S{0,80}?" + _LATIN_PREV + r"%S{0,60}?" + _LATIN_RULES),
    ("latin", True, _IGNORE,
     _IGNORE_VERB + r"%S{0,30}?" + _LATIN_RULES + r"%S{0,30}?" + _LATIN_PREV),
    ("latin", True, _IGNORE,
     _IGNORE_VERB + r"%S{0,20}?\b(?:alle[ns]?|toutes|todas|tutte|wszystki\w*|tất\s+cả|tüm)\b"
     r"%S{0,40}?" + _LATIN_RULES),
    ("latin", True, "ignor|yok say|görmezden",
     _LATIN_PREV + r"%S{0,30}?" + _LATIN_RULES + r"%S{0,30}?\b(?:ignor\w*|yok\s+say\w*|görmezden)"),
    # you must now (do something): second person + modal + an action, per language
    ("de", True, "musst|sollst|wirst|müssen|sollen",
     r"\b(?:du\s+(?:musst|sollst|wirst)|sie\s+(?:müssen|sollen))\b%S{0,60}?"
     r"(?:ausführen|löschen|entfernen|senden|schicken|installieren|starten|aufrufen|"
     r"ignorieren|deaktivieren|herunterladen|pushen|eingeben|ausgeben)"),
    ("fr", True, "vous devez|tu dois",
     r"\b(?:vous\s+devez|tu\s+dois)\b%S{0,40}?\b(?:ex[ée]cuter|lancer|supprimer|effacer|"
     r"envoyer|installer|ignorer|d[ée]sactiver|t[ée]l[ée]charger|taper|pousser|appeler)"),
    ("es/pt/it", True, "debe|deber|tienes que|deve|tens de|devi|dovrai",
     r"\b(?:debes|deber[áa]s|tienes\s+que|usted\s+debe|voc[êe]\s+deve|deves|tens\s+de|"
     r"devi|dovrai|deve)\b%S{0,40}?\b(?:ejecutar|borrar|eliminar|enviar|instalar|ignorar|"
     r"desactivar|descargar|executar|apagar|excluir|remover|baixar|eseguire|cancellare|"
     r"eliminare|inviare|installare|ignorare|disattivare|scaricare|rimuovere)"),
    ("pl", True, "musisz|powinie|powinna|masz",
     r"\b(?:musisz|powinieneś|powinnaś|masz)\b%S{0,40}?\b(?:uruchomi\w*|usun\w*|wysła\w*|"
     r"zainstalowa\w*|zignorowa\w*|wyłączy\w*|pobra\w*|wykona\w*|skasowa\w*)"),
    ("vi", True, "",
     r"\bbạn\s+(?:phải|cần\s+phải|nên)\b%S{0,40}?\b(?:chạy|xóa|xoá|gửi|cài|bỏ\s+qua|"
     r"tắt|tải|thực\s+thi|thực\s+hiện)"),
    ("tr", True, "",
     r"\b\w+(?:melisin|malısın|melisiniz|malısınız|meniz\s+gerek\w*|manız\s+gerek\w*)\b"),
    # keep it from the user
    ("latin", True,
     "sag |sagen|erzähl|erzahl|ne dites|ne dis|digas|diga |não conte|não diga|non dire|"
     "non dirlo|nie mów|đừng nói|söyleme",
     r"\b(?:sag|sagen\s+sie|erz[äa]hl\w*|ne\s+dites|ne\s+dis|no\s+(?:le\s+)?digas|"
     r"no\s+(?:le\s+)?diga|não\s+(?:conte|diga)|non\s+dire|non\s+dirlo|nie\s+mów\w*|"
     r"đừng\s+nói|söyleme\w*)\b%S{0,30}?\b(?:benutzer\w*|nutzer\w*|utilisateur|usuario|"
     r"usuário|utente|użytkownik\w*|người\s+dùng|kullanıcı\w*)"),
    # a role marker in any language ("系统提示：", "Система:", "Asistente:")
    ("latin", True, "syst|sistem|asyst|asist|assist|hệ thống|trợ lý",
     r"(?:^|[.!?;]\s*)(?:syst[eè]me|sistema|sistem|system|asystent|asistente|assistente|"
     r"assistent|asistan|hệ\s+thống|trợ\s+lý)\s*[:：]"),
    ("ru", True, "", r"(?:^|[.!?;]\s*)(?:система|ассистент|системное\s+сообщение)\s*:"),
    ("ar", True, "", r"(?:النظام|المساعد|رسالة\s+النظام)\s*:"),
    ("hi", True, "", r"(?:सिस्टम|सहायक)\s*:"),
    ("zh", True, "", r"(?:系统|系統|助手)(?:提示|消息|通知|訊息|指令)?\s*[:：]"),
    ("ja", True, "", r"(?:システム|アシスタント)(?:メッセージ|通知)?\s*[:：]"),
    ("ko", True, "", r"(?:시스템|어시스턴트)(?:\s*메시지)?\s*[:：]"),
    # the reader named: a diagnostic never speaks to the assistant (quotes only)
    ("en", False, "assistant|ai |llm ",
     r"\b(?:ai|llm)\s+(?:agent|assistant|model)\b|\bassistant\b(?![:/.-])"),
    ("latin", False, "ki|assist|asist|asyst|trợ lý|l'ia|la ia|a ia|l'ai",
     r"\b(?:ki-?(?:agent|assistent)\w*|assistent(?:in)?|asistente|assistente|asystent\w*|"
     r"trợ\s+lý|asistan\w*|l'assistant|l'ia|la\s+ia|a\s+ia|l'ai)\b|\bKI\b"),
    ("latin", False, "agent|zeka",
     r"\b(?:para\s+el|para\s+o|al|ao|per\s+l'|pour\s+l'|à\s+l'|für\s+den|an\s+den|dla)\s*"
     r"agent\w*|\byapay\s+zek\w*"),
    # "a note to ...:", "instruction for ...:" (a message to someone, not a diagnostic)
    ("latin", False, "note|notiz|hinweis|nota|instru|notatka|ghi chú",
     r"\b(?:note|notiz|hinweis|nota|instruction|instrucción|instrução|istruzione|notatka|"
     r"ghi\s+chú)\s+(?:to|for|an|für|pour|para|per|dla|cho|à)\b"),
    ("ru", False, "",
     r"(?:ассистент|помощник|нейросет|модель\s+ии|\bии\b|\bші\b)\w*"
     r"|(?:примечание|примітка|заметка|указание)\s+(?:для|к)\b"),
    ("ar", False, "", r"(?:المساعد|ذكاء\s+ال?اصطناعي|ملاحظة\s+ل)"),
    ("hi", False, "", r"(?:सहायक|एआई)"),
    ("zh", False, "", r"(?:助手|人工智能|智能体|AI\s*(?:助手|代理)|给\s*AI|給\s*AI|备注|備註)"),
    ("ja", False, "", r"(?:アシスタント|エージェント|AI\s*(?:アシスタント|エージェント)|AIへ)"),
    ("ko", False, "", r"(?:어시스턴트|에이전트|인공지능|AI\s*에게)"),
    ("th", False, "", r"(?:ผู้ช่วย|เอไอ|ถึง\s*AI)"),
    # an imperative opening a clause ("..., send the key to")
    ("en", False,
     "send|delete|remove|run|execute|upload|post|email|forward|share|reveal|print|push|"
     "disable|download|install|erase|wipe|paste",
     r"(?:^|[:;,.!]\s*)(?:send|delete|remove|run|execute|upload|post|email|forward|share|"
     r"reveal|print|push|disable|download|install|erase|wipe|paste)\s+(?:the|your|all|this|"
     r"these|it|my|a|an|every|any)\b"),
    # requests and imperatives a diagnostic does not make (quotes only)
    ("en", False, "fix|resolve|repair|continue|proceed|solve|recover|correct",
     r"\b(?:please\s+)?(?:run|execute|exec|type|paste|enter|call|invoke|install|download|"
     r"delete|remove|push|reset|send|use)\b%S{0,120}?\b(?:to|in\s+order\s+to)\s+"
     r"(?:fix|resolve|repair|continue|proceed|solve|recover|correct)\b"),
    ("en", False, "fix|resolve|repair|solve|correct",
     r"\bto\s+(?:fix|resolve|repair|solve|correct)\s+(?:this|it|the\s+\w+)\s*[,:]?\s*"
     r"(?:please\s+)?(?:run|execute|type|use|call|delete|remove|push)\b"),
    ("en", False, "whoever|anyone|reader|model|agent|ai ",
     r"\b(?:whoever|anyone\s+who|the\s+(?:reader|model|agent|ai|llm))\b%S{0,40}?"
     r"\b(?:should|must|needs?\s+to|has\s+to|is\s+to)\b"),
    ("en", False, "please",
     r"\bplease\s+(?:run|execute|type|paste|delete|remove|install|download|send|"
     r"push|call|open|visit)\b"),
    ("de", False, "bitte|führe|fuhre|führen|lösche|installier|starte|rufe|tippe|lade|sende",
     r"\b(?:bitte|führe|fuhre|führen\s+sie|lösche|löschen\s+sie|installiere|installieren\s+sie|"
     r"starte|starten\s+sie|rufe|rufen\s+sie|tippe|tippen\s+sie|lade|laden\s+sie|sende|"
     r"senden\s+sie)\b"),
    ("de", False, "beheben|lösen|korrigieren",
     r"\bum\s+(?:den|das|die|diesen)\s+\w+\s+zu\s+(?:beheben|lösen|korrigieren)"),
    ("fr", False,
     "veuillez|xécut|xecut|lancez|supprimez|tapez|installez|chargez|envoyez|lance la|pour |"
     "afin de|merci d",
     r"\b(?:veuillez|ex[ée]cutez|lancez|supprimez|tapez|installez|t[ée]l[ée]chargez|envoyez|"
     r"ex[ée]cute\s+la|lance\s+la)\b|\b(?:pour|afin\s+de)\s+(?:corriger|r[ée]soudre|"
     r"r[ée]parer)\b|\bmerci\s+d(?:e\s+|')\w+er\b"),
    ("es", False, "por favor|ejecut|borra|elimine|instala|descarg|escrib|envía|envia|para ",
     r"\b(?:por\s+favor|ejecuta|ejecute|ejecutad|borra|elimine|instala|instale|descarga|"
     r"descargue|escribe|escriba|env[íi]a)\b|\bpara\s+(?:solucionar|corregir|arreglar|"
     r"resolver)\b"),
    ("pt", False, "por favor|execut|rode|apague|exclua|instale|baixe|digite|envie|para ",
     r"\b(?:por\s+favor|execute|execut[ae]|rode|apague|exclua|instale|baixe|digite|envie)\b"
     r"%S{0,80}?\b(?:para|e)\b|\bpara\s+(?:corrigir|resolver|consertar)\b"),
    ("it", False,
     "per favore|esegui|lancia|cancella|elimina|installa|scarica|digita|invia|per ",
     r"\b(?:per\s+favore|esegui|eseguite|lancia|cancella|elimina|installa|scarica|digita|"
     r"invia)\b|\bper\s+(?:risolvere|correggere|sistemare)\b"),
    ("pl", False,
     "proszę|uruchom|wykonaj|usuń|skasuj|zainstaluj|pobierz|wpisz|wyślij|aby ",
     r"\b(?:proszę|uruchom|wykonaj|usuń|skasuj|zainstaluj|pobierz|wpisz|wyślij)\b|"
     r"\baby\s+(?:naprawić|rozwiązać|poprawić)\b"),
    ("vi", False, "", r"\b(?:hãy|vui\s+lòng|xin\s+hãy)\b|\bđể\s+(?:sửa|khắc\s+phục)\b"),
    ("tr", False, "",
     r"\b(?:lütfen|\w+(?:ıştırın|iştirin|ıştır|iştir|ayın|eyin|ırın|irin|urun|ürün))\b|"
     r"\bdüzeltmek\s+için\b"),
    # Cyrillic
    ("ru", True, "",
     r"(?:игнорир\w*|проигнорир\w*|забудь\w*|не\s+обращай\w*)%S{0,60}?"
     r"(?:инструкци\w*|указани\w*|правил\w*|команд\w*)"),
    ("ru", True, "",
     r"(?:ты|вы)\s+(?:должн\w*|обязан\w*)%S{0,40}?(?:выполн\w*|удал\w*|запуст\w*|"
     r"отправ\w*|установ\w*|отключ\w*|скача\w*)"),
    ("ru", True, "", r"не\s+(?:говори|сообщай|рассказывай)\w*%S{0,20}?пользовател"),
    ("ru", False, "",
     r"(?:^|[\s,.:;])(?:пожалуйста|выполни\w*|запусти\w*|удали\w*|установи\w*|скачай\w*|"
     r"введи\w*|отправь\w*|выведи\w*)(?=[\s,.:;!]|$)|чтобы\s+исправить"),
    # Arabic
    ("ar", True, "",
     r"(?:تجاهل|انس|لا\s+تلتزم)[^.!?؟]{0,60}?(?:التعليمات|الأوامر|القواعد|التوجيهات)"),
    ("ar", True, "", r"يجب\s+عليك|عليك\s+(?:الآن\s+)?أن|لا\s+تخبر"),
    ("ar", False, "", r"(?:^|\s)(?:قم\s+ب|من\s+فضلك|يرجى|الرجاء|نفذ|شغل|احذف|ثبت|أرسل)|لإصلاح"),
    # Devanagari (Hindi)
    ("hi", True, "",
     r"(?:पिछले|पूर्व|ऊपर\s+के|सभी)[^.!?।]{0,40}?(?:निर्देश|नियम)[^.!?।]{0,40}?"
     r"(?:अनदेखा|नज़रअंदाज़|नजरअंदाज|भूल)"),
    ("hi", True, "", r"(?:आपको|तुम्हें|तुमको)[^.!?।]{0,60}?(?:होगा|होगी|चाहिए)"),
    ("hi", True, "", r"उपयोगकर्ता\s+को\s+(?:न|मत)\s+बता"),
    ("hi", False, "",
     r"(?:कृपया|चलाएँ|चलाएं|चलाइए|हटाएँ|हटाएं|इंस्टॉल\s+करें|करें|कीजिए|दिखाएँ|दिखाएं)"
     r"|ठीक\s+करने\s+के\s+लिए"),
    # Han (Chinese; Japanese kanji share the block)
    ("zh", True, "",
     r"(?:忽略|无视|無視|忘记|忘記|不要理会|不要遵守)[^。！？]{0,20}?"
     r"(?:指令|指示|说明|說明|规则|規則|提示|命令)"),
    ("zh", True, "",
     r"(?:你|您)(?:现在|現在|必须|必須|需要|应该|應該|得)[^。！？]{0,30}?"
     r"(?:运行|運行|执行|執行|删除|刪除|发送|發送|安装|安裝|下载|下載|禁用|关闭|關閉)"),
    ("zh", True, "", r"(?:不要|别|別|切勿)(?:告诉|告訴|通知|提醒)(?:用户|用戶|使用者)"),
    ("zh", True, "",
     r"(?:助手|模型|AI|人工智能)[^。！？]{0,10}?(?:必须|必須|应该|應該|需要|请|請)"),
    ("zh", False, "",
     r"请|請|务必|務必|(?:立即|立刻|马上|馬上|立马|赶紧)(?:运行|執行|执行|運行|删除|刪除|上传|上傳)"
     r"|(?:运行|執行|执行|運行)[^。！？]{0,40}?"
     r"(?:来|來|以)(?:修复|修復|解决|解決|继续|繼續)"),
    # Japanese kana
    ("ja", True, "",
     r"(?:以前|前|上記|これまで)の(?:指示|命令|ルール|規則)[^。！？]{0,10}?(?:を)?(?:無視|忘れ)"),
    ("ja", True, "",
     r"ユーザー(?:に|には)[^。！？]{0,10}?(?:言わ|伝え|知らせ)(?:ない|るな|ずに)"),
    ("ja", False, "",
     r"(?:して|て)(?:ください|下さい)|しなさい|(?:実行|削除|インストール)(?:しろ|せよ|して)"
     r"|(?:修正|解決)するには|せよ|しろ(?=[\s。！]|$)|すること(?=[\s。！]|$)"),
    # Korean
    ("ko", True, "", r"(?:이전|앞의|위의|모든)\s*(?:지시|명령|규칙|지침)%S{0,20}?(?:무시|잊)"),
    ("ko", True, "", r"(?:당신|너|네가|귀하)%S{0,30}?(?:해야|하십시오|하세요|해라)"),
    ("ko", False, "",
     r"(?:세요|십시오|주세요|해라|하라|해야\s*합니다|해야\s*한다)(?=[\s.!?]|$)"
     r"|(?:고치려면|해결하려면)"),
    # Thai
    ("th", True, "", r"(?:ละเว้น|เพิกเฉย|ลืม)%S{0,40}?(?:คำสั่ง|คำแนะนำ|กฎ)"),
    ("th", False, "", r"(?:กรุณา|โปรด|ช่วย)|(?:เพื่อแก้ไข)"),
]  # fmt: skip

#: Which rows a text's scripts call for: (row languages, a character class of the script).
_SCRIPTS: list[tuple[frozenset[str], str]] = [
    (frozenset({"ru"}), "[\u0400-\u04ff]"),
    (frozenset({"ar"}), "[\u0600-\u06ff]"),
    (frozenset({"hi"}), "[\u0900-\u097f]"),
    (frozenset({"zh"}), "[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]"),
    (frozenset({"ja"}), "[\u3040-\u30ff]"),
    (frozenset({"ko"}), "[\uac00-\ud7af\u1100-\u11ff]"),
    (frozenset({"th"}), "[\u0e00-\u0e7f]"),
    (frozenset({"tr"}), "[ğĞışŞİ]"),
    (frozenset({"vi"}), "[\u1ea0-\u1effđĐơƠưƯăĂ]"),
]
#: "AI" (or KI, IA, ИИ, ШІ) as a word, in capitals, in a text beyond ASCII: a diagnostic in
#: another language never names the AI; a message to it does ("Ghi chú cho AI: ...").
_AI_TOKEN = r"(?<![^\W\d_])(?:AI|KI|IA|ИИ|ШІ)(?![^\W\d_])"  # compiled on first use (re's cache)
#: :data:`_ROWS` with their needles split once.
_PARSED = [(lang, tier, tuple(n.split("|")) if n else (), p) for lang, tier, n, p in _ROWS]
_LATIN_LANGS = frozenset({"latin", "en", "de", "fr", "es", "pt", "it", "pl", "es/pt/it"})


def instruction(text: str, *, strict: bool = False) -> str | None:
    """The first instruction marker in ``text`` as ``"<language>: <what matched>"``, or
    None. ``strict``: only markers that are never a note (ignore the previous
    instructions, "you must now delete", keep it from the user); otherwise also
    requests and imperatives (please, run X to fix, "führe ... aus", "请运行")."""
    langs = set(_LATIN_LANGS)
    if not text.isascii():
        langs.update(*(names for names, cls in _SCRIPTS if _re(cls).search(text)))
    low = text.lower()
    if not strict and not text.isascii():
        m = re.search(_AI_TOKEN, text)
        if m:
            return f"any: {m.group(0)}"
    for lang, tier, needles, pattern in _PARSED:
        if (strict and not tier) or lang not in langs:
            continue
        if needles and not any(n in low for n in needles):
            continue
        m = _re(pattern.replace("%S", _SENTENCE)).search(text)
        if m:
            return f"{lang}: {m.group(0).strip()[:40]}"
    return None


# -- diagnostics ----------------------------------------------------------------------------

# A diagnostic's frame: "cat: x:", "src/a.rs:12:5:", "error[E0425]:", "ModuleNotFoundError:".
_FRAME = r"^\s*[A-Za-z0-9_.~/\\-]+(?:\[[\w-]+\])?\s?[:：]"  # a program or a path: ASCII
# Codes and classes: ENOENT, E0425, TS2304, npm ERR!, FAILED, SomethingError.
_CODE = (
    r"\bE[A-Z]{3,}\b|\b[A-Z]{1,4}\d{3,}\b|\bERR!|\bFAILED\b|\berrno\b|\bexit\s+(?:code|status)\b"
    r"|\b[A-Z]\w*(?:Error|Exception|Warning|Failure)\b"
)
#: Words diagnostics are made of, in the languages of the instruction markers.
_DIAG_WORDS = (
    r"error|fail\w*|not\s+found|denied|invalid|cannot|can't|could\s+not|unable|missing|unknown|"
    r"no\s+such|unexpected|undefined|expected|time[sd]?\s*out|refused|forbidden|unauthori[sz]ed|"
    r"not\s+allowed|exceeded|fatal|warning|abort\w*|fehler|nicht\s+gefunden|keine?|ungültig|"
    r"kann\s+nicht|erreur|introuvable|impossible|aucun|non\s+accord[ée]e|invalide|no\s+existe|"
    r"refus[ée]e?|[ée]chec|[ée]chou[ée]|n[’']a\s+pas\s+pu|rechazad[ao]|recusad[ao]|rifiutat[ao]|"
    r"odmow\w*|reddedildi|"
    r"no\s+encontrad[ao]|denegad[ao]|erro|não\s+encontrad[ao]|inexistente|negad[ao]|errore|"
    r"non\s+trovat[ao]|non\s+esistente|negato|ошибк\w*|не\s+найден\w*|нет\s+такого|"
    r"невозможно|не\s+удалось|отказано|błąd|nie\s+znaleziono|nie\s+ma|brak|lỗi|"
    r"không\s+tìm\s+thấy|không\s+có|không\s+thể|hata\w*|bulunamad\w*|yok|başarısız|"
    r"خطأ|غير\s+موجود|لا\s+يوجد|فشل|त्रुटि|नहीं|विफल|错误|錯誤|失败|失敗|未找到|找不到|没有|沒有|"
    r"无法|無法|不是|エラー|見つかりません|ありません|できません|오류|에러|찾을\s*수\s*없|없습니다|실패"
)


def diagnostic_shape(text: str) -> bool:
    """Whether ``text`` looks like a program's diagnostic: a ``name:`` frame (a program,
    a path and line, an error class), an error code or class, or a diagnostic word in
    one of the languages :func:`instruction` knows."""
    return bool(
        _re(_FRAME).search(text)
        or re.search(_CODE, text)
        or _re(rf"(?:^|\b|(?<=\W)){_DIAG_WORDS}").search(text)
    )


def natural_units(text: str) -> int:
    """How many words of natural language ``text`` holds: what is left once paths,
    identifiers with digits or punctuation inside, numbers and quoted code are taken
    out; a word of a spaced script is one, two characters of an unspaced one are one
    (a word of Chinese or Japanese is one to three characters)."""
    text = re.sub(r"`[^`]*`|'[^'\s]*'|\"[^\"\s]*\"", "", text)
    words = [w for w in text.split() if not re.search(r"[\d/\\_=<>{}\[\]()$@#|]|\w\.\w", w)]
    dense = sum(len(_re(f"[{_UNSPACED_CLASS}]").findall(w)) for w in words)
    return units(" ".join(words)) - dense + -(-dense // 2)
