"""Sensitive values as people say them, and ordinary text that only looks like them.

Written for the second round of the privacy filter: passwords said indirectly, IDs with their
separators, numbers spelled out, vendor keys through detect-secrets, addresses and IPs. Every
positive names the value that must be gone after `redact`; every negative must come back
unchanged. The ordinary statements in tests/data/ordinary_statements.txt are negatives too.
"""

from pathlib import Path

import pytest

from memory.privacy.screen import LABELS, describe, find_sensitive, hk_id_ok, redact, tw_id_ok

# (text, kind, a piece of the value that must not survive redaction)
POSITIVE = [
    # --- passwords, said indirectly (en)
    ("The password for my router is Whiskers2019!", "password", "Whiskers2019"),
    ("wifi pw: Mango!Tree#77", "password", "Mango!Tree#77"),
    ("The password to my laptop is Blue$Sky42", "password", "Blue$Sky42"),
    ("I set my password to Tr0ub4dor&3 yesterday", "password", "Tr0ub4dor&3"),
    ("I changed the wifi password to Purple_Rain88.", "password", "Purple_Rain88"),
    ("the passcode for the garage is 4729#", "password", "4729#"),
    ("My Netflix password is now Sunflower77", "password", "Sunflower77"),
    ("pw = kX9!mQ2z", "password", "kX9!mQ2z"),
    ("Wi-Fi key: CoffeeBean2024", "password", "CoffeeBean2024"),
    ("pwd for the NAS: nas_admin_7781", "password", "nas_admin_7781"),
    ("The PIN on my debit card is 8264", "password", "8264"),
    ("my door code is 5512", "password", "5512"),
    ("my passphrase is correct-horse-battery-staple9", "password", "correct-horse"),
    ("My pin is four three two one.", "password", "four three two one"),
    ("The password of my email account is Qwerty!2345", "password", "Qwerty!2345"),
    ("otp: 771204", "password", "771204"),
    ("Login password: Dragon_Fly_99", "password", "Dragon_Fly_99"),
    ("My bank pin is 0937", "password", "0937"),
    # --- passwords, said indirectly (zh)
    ("我的密码跟我生日一样是19900101", "password", "19900101"),
    ("wifi密码我设的是Lemon2023", "password", "Lemon2023"),
    ("我把密码改成了Aa123456!", "password", "Aa123456"),
    ("邮箱密码和QQ的一样，都是qq778899", "password", "qq778899"),
    ("路由器的密码设置为tp_link_2024", "password", "tp_link_2024"),
    ("支付宝支付密码是668899", "password", "668899"),
    ("我的开机密码为Sun@2024", "password", "Sun@2024"),
    ("门禁密码：2580#", "password", "2580#"),
    ("密码是一二三四五六", "password", "一二三四五六"),
    ("银行卡密码是六六八八九九", "password", "六六八八九九"),
    ("口令换成了Tiger#2025", "password", "Tiger#2025"),
    ("验证码：５５２１８３", "password", "５５２１８３"),
    ("我家wifi密码是 88888888", "password", "88888888"),
    ("电脑密码用的是我女儿名字加生日xiaoyu0601", "password", "xiaoyu0601"),
    # --- vendor keys and tokens (detect-secrets and the prefix rules)
    (
        "my sendgrid key is SG.abcdefghijklmnopqrstuv.abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG",
        "secret",
        "SG.abcdefghijklmnopqrstuv",
    ),
    (
        "-----BEGIN OPENSSH PRIVATE KEY-----\n"
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
        "QyNTUxOQAAACDxQk7v1o3yq0H8k1p6pyX0bW2vQ3d0sXk1ZxQk7v1o3yAAAAJi\n"
        "-----END OPENSSH PRIVATE KEY-----",
        "secret",
        "QyNTUxOQAAACDxQk7v1o3yq0H8k1p6pyX0bW2vQ3d0sXk1ZxQk7v1o3yAAAAJi",
    ),
    (
        "here is my key: -----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7bq98\n"
        "-----END RSA PRIVATE KEY----- keep it safe",
        "secret",
        "MIIEpAIBAAKCAQEA7bq98",
    ),
    (
        "I pasted -----BEGIN EC PRIVATE KEY----- MHcCAQEEIBYr9QqQ6fake and then it cut off",
        "secret",
        "MHcCAQEEIBYr9QqQ6fake",
    ),
    ("our stripe key sk_live_51HcXjQKs9fE3abCDefGHijkl", "secret", "51HcXjQKs9fE3abCDefGHijkl"),
    ("npm token npm_abcdefghijklmnopqrstuvwxyz0123456789", "secret", "npm_abcdefghijkl"),
    (
        "pypi-AgEIcHlwaS5vcmcCJGFiY2RlZmdoLWlqa2wtbW5vcC1xcnN0LXV2d3h5ejAxMjM0NQACKlszLCJhYmMiXQAABiD",
        "secret",
        "pypi-AgEIcHlwaS5vcmc",
    ),
    ("glpat-abcdefghij0123456789 is the gitlab one", "secret", "glpat-abcdefghij0123456789"),
    ("AWS: AKIAJ7Q2XYZ4ABCD1234", "secret", "AKIAJ7Q2XYZ4ABCD1234"),
    ("clone https://alice:S3cr3tPass@git.example.com/repo.git", "secret", "S3cr3tPass"),
    ("mailchimp 0123456789abcdef0123456789abcdef-us12", "secret", "0123456789abcdef"),
    ("twilio SK0123456789abcdef0123456789abcdef", "secret", "SK0123456789abcdef"),
    (
        "jwt: eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJhbGljZSJ9.4pcPyMD09olPSyXnrXCjTwXyr",
        "secret",
        "eyJzdWIiOiJhbGljZSJ9",
    ),
    ("the deploy token is Zq8Lm2Rt7Vx4Kp9Wn3Hs6Jd1Fb5Gc0Ye", "secret", "Zq8Lm2Rt7Vx4Kp9Wn3Hs6Jd1"),
    ("paste this: Qm4Tz8Wk2Rv6Xn0Lp5Hs9Jd3Fb7Gc1Ya", "secret", "Qm4Tz8Wk2Rv6Xn0Lp5Hs9Jd3"),
    ("换成这个 Lk9Pz3Xq7Rm1Tv5Wn8Hs2Jd6Fb0Gc4Ye 吧", "secret", "Lk9Pz3Xq7Rm1Tv5Wn8Hs2Jd6"),
    ("我的token是Hx7Kq2Lm9Pz4Rt8Vw3Ny6Bc1Df5Gj0Ks", "secret", "Hx7Kq2Lm9Pz4Rt8Vw3Ny6Bc1"),
    ("接口密钥：9fK3mQ7xL2pR8vT4wZ6yB1nC5hJ0dG", "secret", "9fK3mQ7xL2pR8vT4wZ6yB1nC"),
    (
        "telegram bot 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw9",
        "secret",
        "AAHdqTcvCH1vGWJxfSeofSAs0K5",
    ),
    # --- cards
    ("4111.1111.1111.1111", "card", "4111.1111.1111.1111"),
    ("my visa is 4111.1111.1111.2226", "card", "1111.2226"),
    ("卡号5555 4444 3333 1111，有效期到28年", "card", "3333 1111"),
    ("my amex: 378282246310005", "card", "378282246310005"),
    ("银联卡6222021234567890128", "card", "6222021234567890128"),
    ("discover 6011-0009-9990-0016", "card", "6011-0009-9990-0016"),
    ("JCB 3528 0000 0000 0007 expires 09/27", "card", "3528 0000 0000 0007"),
    (
        "card number is four one one one one one one one one one one one one one one one",
        "card",
        "four one one one one one one one",
    ),
    ("my mastercard 5105105105105100 please", "card", "5105105105105100"),
    ("信用卡号4000-0056-7891-2347", "card", "4000-0056-7891-2347"),
    # --- mainland, Hong Kong and Taiwan IDs; SSNs
    ("110105-19900307-2316", "national_id", "19900307"),
    ("身份证 110105 19900307 2316", "national_id", "19900307"),
    ("我的身份证是310104198512123013", "national_id", "310104198512123013"),
    ("身份证号码：440305199202294512", "national_id", "440305199202294512"),
    ("ID: 11010819780615007X", "national_id", "11010819780615007X"),
    ("身份证号是320502196909301230，末位可能记错了", "national_id", "320502196909301230"),
    ("我的香港身份证是A123456(3)", "national_id", "A123456(3)"),
    ("HKID Z654321(A)", "national_id", "Z654321(A)"),
    ("香港身份证号 K6543219", "national_id", "K6543219"),
    ("my hk id is XY987654(8)", "national_id", "XY987654"),
    ("台湾身份证A123456789", "national_id", "A123456789"),
    ("身分證字號 F135792464", "national_id", "F135792464"),
    ("My social is 219099999", "national_id", "219099999"),
    ("my social security number is 536-90-4399", "national_id", "536-90-4399"),
    ("SSN: 078 05 1120", "national_id", "078 05 1120"),
    ("social no. 123456789", "national_id", "123456789"),
    ("her ssn was 512-44-8765", "national_id", "512-44-8765"),
    # --- passports
    ("passport number E12345678", "passport", "E12345678"),
    ("我的护照号码是G12345678", "passport", "G12345678"),
    ("my passport no. is 548723190", "passport", "548723190"),
    ("护照号：EA1234567", "passport", "EA1234567"),
    ("港澳通行证C87654321", "passport", "C87654321"),
    ("Passport #: K0123456", "passport", "K0123456"),
    ("my passport is X9876543", "passport", "X9876543"),
    # --- phones, spelled out
    ("call me at four one five five five five two six seven one", "phone", "five five two six"),
    ("我的手机是幺三八一二三四五六七八", "phone", "幺三八一二三四五六七八"),
    ("手机号一三九零零零零一二三四", "phone", "一三九零零零零一二三四"),
    ("my cell is 415-555-0198", "phone", "415-555-0198"),
    ("电话：021-62345678", "phone", "62345678"),
    # --- messaging IDs
    ("我的微信号是wxid_k9a8b7c6", "messaging_id", "wxid_k9a8b7c6"),
    ("加我微信 lily_1990", "messaging_id", "lily_1990"),
    ("my WeChat ID is tom-zhang88", "messaging_id", "tom-zhang88"),
    ("微信：sunny_day_007", "messaging_id", "sunny_day_007"),
    ("我的QQ号是123456789", "messaging_id", "123456789"),
    ("qq: 88776655", "messaging_id", "88776655"),
    ("vx: abc123xyz", "messaging_id", "abc123xyz"),
    # --- emails
    ("发到我工作邮箱 li.wei@corp-mail.cn 吧", "email", "li.wei@corp-mail.cn"),
    ("my personal email is jane.doe1987@gmail.com", "email", "jane.doe1987@gmail.com"),
    # --- IP addresses
    ("my server ip is 203.0.113.45", "ip_address", "203.0.113.45"),
    ("the router is at 192.168.1.1", "ip_address", "192.168.1.1"),
    ("ssh into 10.0.0.12:2222 with my key", "ip_address", "10.0.0.12"),
    ("我家的公网IP是58.32.101.7", "ip_address", "58.32.101.7"),
    ("服务器地址 172.16.254.3", "ip_address", "172.16.254.3"),
    ("my ipv6 is 2001:db8:85a3::8a2e:370:7334", "ip_address", "2001:db8:85a3"),
    ("connect to fe80::1ff:fe23:4567:890a", "ip_address", "fe80::1ff"),
    ("NAS is on 192.168.0.200 now", "ip_address", "192.168.0.200"),
    # --- street addresses
    ("I live at 42 Baker Street", "address", "42 Baker"),
    ("221B Baker Street, London", "address", "221B"),
    ("send it to 1600 Pennsylvania Avenue", "address", "1600"),
    ("My address is 350 Fifth Ave, New York", "address", "350 Fifth"),
    ("I moved to 12 Rose Lane last month", "address", "12 Rose Lane"),
    ("we live at 77 maple drive", "address", "77 maple"),
    ("deliver to 9 N Elm St", "address", "9 N Elm"),
    ("Our flat is at 3 Kings Road", "address", "3 Kings Road"),
    ("Hauptstraße 12, Berlin", "address", "Hauptstraße 12"),
    ("je vis au 5 rue de Rivoli", "address", "5 rue de Rivoli"),
    ("我家住在北京市朝阳区建国路88号3栋2单元501", "address", "88号"),
    ("我住中山路123号", "address", "123号"),
    ("快递寄到南锣鼓巷8号", "address", "8号"),
    ("我家在淮海中路1500弄", "address", "淮海中路"),
    ("我住在人民大道一百二十号", "address", "一百二十号"),
    ("我家是幸福小区3栋2单元501室", "address", "501"),
    ("地址：上海市徐汇区漕溪北路88号1502室", "address", "1502"),
    ("我搬到了长安街10号院子对面", "address", "10号"),
    ("我住在5号楼1203", "address", "1203"),
    ("我家地址是深南大道6008号", "address", "6008号"),
    # --- bank accounts
    ("my iban is FR14 2004 1010 0505 0001 3M02 606", "bank_account", "2004 1010"),
    ("NL91ABNA0417164300 is my Dutch account", "bank_account", "NL91ABNA0417164300"),
    ("工资卡账号 6217 0000 1234 5678", "bank_account", "1234 5678"),
]

# Ordinary text that looks a little like a sensitive value.
NEGATIVE = [
    # --- a keyword with no value
    "The password for my router is written on a sticker.",
    "The password for the wifi is on the fridge.",
    "My password is the same as before.",
    "I changed my password to something longer.",
    "The password must be at least 12 characters.",
    "I need my password to log in.",
    "Please never ask me for my password.",
    "What is a strong password?",
    "I keep forgetting my PIN.",
    "The PIN pad is broken.",
    "My social life is busy.",
    "My social media is private.",
    "She posted it on social media in 2021.",
    "I lost my passport in Rome.",
    "My passport photo is terrible.",
    "My passport is valid until 2031.",
    "I use WeChat every day.",
    "WeChat is popular in China.",
    "Add me on WeChat later.",
    "QQ music has better songs.",
    "The IP law class was interesting.",
    "My IP camera broke.",
    "The API key rotation happens monthly.",
    "I got a token for the subway.",
    "The secret ingredient is love.",
    "My private key is on a hardware wallet.",
    "Send the key to the landlord.",
    "我的密码跟以前一样。",
    "密码长度是8位。",
    "密码我记在本子上了。",
    "wifi密码在路由器背面。",
    "我忘了支付密码。",
    "密码错误次数太多了。",
    "我不记得护照放哪了。",
    "护照下个月到期。",
    "我用微信付款。",
    "微信上跟他聊了两个小时。",
    "我加了她的微信。",
    "身份证过期了要去换。",
    "我的身份证丢了。",
    "验证码一直收不到。",
    "我的IP被封了。",
    "服务器又宕机了。",
    "我家在中山路上。",
    "我们在南京路步行街见。",
    "我在三号楼上班。",
    "地铁5号线很挤。",
    "我在2号航站楼。",
    "一号门口见。",
    # --- numbers shaped like IDs, cards, phones, IPs
    "4111.1111.1111.1112",
    "card 5555 4444 3333 1112",
    "110105-19901307-2316",
    "110105-19900332-2316",
    "990105-19900307-2316",
    "A123456(4)",
    "A123456789 is a part number",
    "A123456780",
    "Z1234567",
    "219-09-999",
    "My number of the day is 219099999.",
    "Version 1.2.3.4",
    "python 3.11.7.1",
    "build 10.0.19041.1",
    "v2.10.3.1 is out",
    "The score was 192.168 points.",
    "The ratio is 1.2.3.4 in the spec.",
    "0.0.0.0",
    "1.1.1.1",
    "I read 4.5.6.7 of the manual.",
    "Time 10:30:45",
    "at 12:00:00 sharp",
    "a::b",
    "std::vector<int>",
    "Order 1234.5678.9012.3456 shipped",
    "The invoice is 12,345,678.90",
    "3.14159265358979",
    "Phone model 15 Pro Max 256",
    "ISBN 978-3-16-148410-0",
    "The 2026-12-09 meeting",
    "2026.12.09",
    "19900101",
    "I was born on 19900101.",
    "My lucky numbers are 4 8 15 16 23 42.",
    "Room 4111, floor 11",
    "flight 4111 from Denver",
    # --- numbers in words that are not sequences of digits
    "one two three, here we go",
    "I have one dog, two cats and three fish.",
    "Twenty four seven we are open.",
    "I bought five six-packs.",
    "一二三四五，上山打老虎",
    "我有三四个朋友在北京。",
    "我们五六个人一起去。",
    "我排第一二三名都行。",
    "九九八十一难",
    "十一月二十号见",
    "二〇二三年三月我去了西藏",
    "two thousand twenty six",
    # --- addresses without a house number, or a number that is not a house number
    "I live on Baker Street.",
    "The shop on Main Street is closed.",
    "I ran 5 miles down the road.",
    "We drove 300 miles on the coast road.",
    "Take Route 66 west.",
    "There are 3 Starbucks on this street.",
    "I walked 2 blocks down Fifth Avenue.",
    "It's about 10 minutes to Oxford Street.",
    "The 5 best restaurants on Queen Street",
    "I need 2 Road Runner tickets.",
    "He scored 3 goals at Park Lane stadium.",
    "我家在人民路附近。",
    "公司在科技园南区。",
    "我在淮海路那家店买的。",
    "京沪高速公路堵了100公里。",
    "沿着长安街走了3公里。",
    "这条路有5公里长。",
    "我在二环路上堵车。",
    "五号线转二号线。",
    "我在十号线上。",
    "我们小区有12栋楼。",
    "3栋的电梯坏了。",
    # --- tokens that are not secrets
    "commit 8503345f2c9a7b1e4d6f0a3c5b7d9e1f2a4c6b8d",
    "uuid 550e8400-e29b-41d4-a716-446655440000",
    "See https://example.com/docs/getting-started/installation-guide",
    "https://docs.example.com/document/d/1aBcD3fGhIjKlMnOpQrStUvWxYz0123456789/edit",
    "video https://www.example.com/watch?v=dQw4w9WgXcQ",
    "use getUserProfile2ByAccountIdentifierV3 here",
    "the file report_2026_Q3_FinalVersion_v12.pdf",
    "The function is called getUserProfileByAccountIdentifier",
    "ThisIsAVeryLongCamelCaseIdentifierName",
    "sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "my github handle is octocat",
    "The file is named report_final_v2_2026.pdf",
    "Use the flag --max-old-space-size=4096",
    "run pip install langgraph-checkpoint-postgres",
    "The docker image is python:3.11-slim-bookworm",
    "abcdefghijklmnopqrstuvwxyzABCDEFGH",
    "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
    "sk-learn is not a package name",
    "I like the SG.Lewis album",
    "eyJ is how base64 JSON starts",
    "-----BEGIN PUBLIC KEY----- is fine to share",
    "a BEGIN PRIVATE KEY line in a tutorial title",
    # --- ordinary statements with money, time and versions
    "I paid $4111 for the bike.",
    "The population is 13,812,345,678 in the game.",
    "We had 219 guests and 99 volunteers.",
    "The error code was 0x80070005.",
    "My score: 98.6",
    "It is 36.6 degrees.",
    "I got 1,999 yuan back.",
    "Chapter 12, page 345",
    "My bib number was 12345.",
    "Gate 23, seat 14A",
    "我的工号是A123。",
    "订单号是20261209123456。",
    "快递单号SF1234567890123",
    "我考了六百二十分。",
    "这台电脑四千九百九十九。",
    "我每个月存三千块。",
    "车牌号我记不清了。",
    "会议号是 123 456 789",
    "I was at 7.45 this morning.",
    "The vote was 5-4.",
    "He was born 1990-03-07.",
    "Between 1990-2000 I lived abroad.",
    "Call at 9, not 10.",
    "The recipe says 2-3 eggs.",
    "I have 2 kids aged 4 and 7.",
    "Temperature range: -5 to 12.",
    "Our zip code area is big.",
    "The meeting is at 3:30 in room 4B.",
    "我的邮箱满了。",
    "Email me later.",
    "@alice said hi",
    "Price: 12.99 EUR",
]

ORDINARY = [
    line
    for line in Path(__file__)
    .parents[1]
    .joinpath("data", "ordinary_statements.txt")
    .read_text(encoding="utf-8")
    .splitlines()
    if line.strip() and not line.startswith("#")
]


@pytest.mark.parametrize(("text", "kind", "value"), POSITIVE)
def test_a_sensitive_value_is_found_and_goes(text: str, kind: str, value: str) -> None:
    kinds = [f.kind for f in find_sensitive(text)]
    assert kinds == [kind], kinds
    out = redact(text)
    assert value not in out
    assert f"[redacted {kind}]" in out
    assert redact(out) == out


@pytest.mark.parametrize("text", NEGATIVE + ORDINARY)
def test_ordinary_text_stays(text: str) -> None:
    assert find_sensitive(text) == []
    assert redact(text) == text


def test_the_cases_are_many_and_in_both_languages() -> None:
    def zh(text: str) -> bool:
        return any("\u4e00" <= c <= "\u9fff" for c in text)

    assert len(POSITIVE) >= 120 and len(NEGATIVE) + len(ORDINARY) >= 200
    assert len(ORDINARY) >= 300
    for cases in ([t for t, _, _ in POSITIVE], NEGATIVE, ORDINARY):
        assert sum(map(zh, cases)) >= len(cases) // 4
        assert sum(not zh(t) for t in cases) >= len(cases) // 4
    assert {k for _, k, _ in POSITIVE} == set(LABELS)


def test_only_the_value_goes_and_the_words_around_it_stay() -> None:
    assert redact("The password for my router is Whiskers2019!") == (
        "The password for my router is [redacted password]"  # the ! may be part of it
    )
    assert redact("我的密码跟我生日一样是19900101") == "我的密码跟我生日一样是[redacted password]"
    assert redact("call me at four one five five five five two six seven one, ok?") == (
        "call me at [redacted phone], ok?"
    )
    text = (
        "key:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\n-----END OPENSSH PRIVATE KEY-----\nbye"
    )
    assert redact(text) == "key:\n[redacted secret]\nbye"


def test_check_digits() -> None:
    assert hk_id_ok("A", "123456", "3") and not hk_id_ok("A", "123456", "4")
    assert hk_id_ok("Z", "654321", "A") and hk_id_ok("XY", "987654", "8")
    assert tw_id_ok("A123456789") and not tw_id_ok("A123456788")
    assert not tw_id_ok("I12345678") and not tw_id_ok("A12345678X")


def test_new_kinds_are_told_in_both_languages() -> None:
    kinds = ["passport", "messaging_id", "ip_address", "address"]
    en, zh = describe(kinds, zh=False), describe(kinds, zh=True)
    assert "passport" in en and "street address" in en
    assert "护照" in zh and "住址" in zh and "微信" in zh
