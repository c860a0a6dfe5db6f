"""Tests of ``agno_compression.tokens``: exact counts offline, the estimate, calibration, caching, fallbacks."""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
import re
import sys
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
import tiktoken
from agno.models.message import Message
from agno.tools.function import Function
from hypothesis import given, settings
from hypothesis import strategies as st

import agno_compression.tokens as tokens_api
from agno_compression._exceptions import ConfigError
from agno_compression._messages import message_text, render_tools
from agno_compression.tokens import (
    EstimateBackend,
    GeminiCountBackend,
    HFTokenizerBackend,
    TextCounter,
    TiktokenBackend,
    TokenCounter,
    count_tokens,
    encoding_for_model,
    estimate_tokens,
    load_encoding,
)
from agno_compression.tokens._counter import (
    MESSAGE_OVERHEAD,
    NAME_OVERHEAD,
    PROMPT_OVERHEAD,
    TOOL_CALL_OVERHEAD,
    TOOL_RESULT_OVERHEAD,
)

TRAJECTORIES = Path(__file__).resolve().parents[2].parent / "shared" / "trajectories"
LOGGER = "agno_compression"
RANK_URLS = {
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
}

# --- realistic samples (written for these tests; not used to fit the estimate) -------------
EN_PROSE = """\
For most of recorded history, the coast was the most dangerous place a sailor could be. The open \
ocean, for all its storms, offered room to manoeuvre; it was the last few miles before harbour, \
where shoals shifted with every winter and rocks lay hidden a fathom below the surface, that claimed \
the greatest number of ships. The earliest lights were nothing more than bonfires kept burning on \
headlands by monks, fishermen or paid watchmen, and their reliability depended entirely on the \
diligence of whoever happened to be holding the torch that night.

The great towers that we now picture when we hear the word "lighthouse" came much later. Building on \
an exposed reef is an engineering problem of a particular cruelty: the work can only be done at low \
tide, in calm weather, and often for no more than a few hours a day during a short summer season. \
When John Smeaton began work on the third Eddystone lighthouse in 1756, he studied the way oak trees \
resist the wind and shaped his tower accordingly, with a broad, heavy base that curved gracefully \
upward into a narrower shaft. His granite blocks were dovetailed into one another and into the rock \
itself, so that the whole structure behaved almost like a single stone. The tower stood for more \
than a century, and when it was finally replaced, it was not because the lighthouse had failed but \
because the rock beneath it was being undercut by the sea.

Light itself was the second problem. A candle or an oil lamp radiates in every direction, and most \
of that energy is wasted on the sky and the sea at the foot of the tower. Reflectors made of \
polished copper and silver helped, but the decisive breakthrough came in 1822, when the French \
physicist Augustin Fresnel proposed a lens made of concentric rings of glass prisms. Each ring bent \
the light by a slightly different amount, so that rays which would otherwise have escaped upward or \
downward were gathered into a single horizontal beam. A first-order Fresnel lens could be taller \
than a man and weigh several tonnes, yet it allowed a single lamp to be seen from more than twenty \
miles away.

With better lights came the need to tell them apart. A captain who sees a light on a dark night must \
know at once which light it is, or it is of little use to him. Engineers therefore gave each station \
its own signature: a fixed light, a single flash every ten seconds, two flashes in quick succession, \
a red sector marking a dangerous bank. These characteristics were printed in official lists and on \
charts, and navigators learned to time the intervals with a watch, counting silently until the beam \
swept around again.

The keepers who tended these lights lived lives of remarkable monotony punctuated by occasional \
terror. The lamp had to be trimmed, the lens cleaned of soot and salt, the clockwork that turned the \
apparatus wound every few hours. On offshore rocks, relief boats could be delayed for weeks by bad \
weather, and food and patience both ran short. Yet many keepers served for decades, and their \
logbooks, with their careful notes on wind, visibility and passing ships, are now treasured by \
historians and climate scientists alike.

Today nearly every lighthouse in the world is automated. Electric lamps, solar panels and remote \
monitoring have replaced the keepers, and satellite navigation has made the lights themselves far \
less important than they once were. Still, many coastal communities have fought to preserve their \
towers, not only as monuments to a vanished way of life, but as a reminder that the sea has never \
stopped being dangerous.
"""

CODE = '''\
"""A small token-bucket rate limiter with per-key buckets and async support."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field


class RateLimitExceeded(RuntimeError):
    """Raised when a caller asks for more tokens than the bucket can ever hold."""


@dataclass
class Bucket:
    capacity: float
    refill_per_second: float
    tokens: float = field(default=0.0)
    updated_at: float = field(default_factory=time.monotonic)

    def refill(self, now: float) -> None:
        elapsed = max(0.0, now - self.updated_at)
        self.tokens = min(self.capacity, self.tokens + elapsed * self.refill_per_second)
        self.updated_at = now

    def try_take(self, amount: float, now: float) -> float:
        """Take ``amount`` tokens if available; return the seconds to wait otherwise."""
        self.refill(now)
        if self.tokens >= amount:
            self.tokens -= amount
            return 0.0
        missing = amount - self.tokens
        return missing / self.refill_per_second


class RateLimiter:
    def __init__(self, capacity: float, per_second: float, clock: Callable[[], float] = time.monotonic) -> None:
        if capacity <= 0 or per_second <= 0:
            raise ValueError(f"capacity and per_second must be positive, got {capacity!r}, {per_second!r}")
        self._capacity = capacity
        self._per_second = per_second
        self._clock = clock
        self._buckets: dict[str, Bucket] = {}
        self._lock = asyncio.Lock()

    def _bucket(self, key: str) -> Bucket:
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = Bucket(self._capacity, self._per_second, tokens=self._capacity, updated_at=self._clock())
            self._buckets[key] = bucket
        return bucket

    def acquire_nowait(self, key: str, amount: float = 1.0) -> bool:
        if amount > self._capacity:
            raise RateLimitExceeded(f"{amount} tokens requested but capacity is {self._capacity}")
        wait = self._bucket(key).try_take(amount, self._clock())
        return wait == 0.0

    async def acquire(self, key: str, amount: float = 1.0) -> None:
        if amount > self._capacity:
            raise RateLimitExceeded(f"{amount} tokens requested but capacity is {self._capacity}")
        while True:
            async with self._lock:
                wait = self._bucket(key).try_take(amount, self._clock())
            if wait == 0.0:
                return
            await asyncio.sleep(wait)

    def snapshot(self) -> dict[str, float]:
        now = self._clock()
        result = {}
        for key, bucket in sorted(self._buckets.items()):
            bucket.refill(now)
            result[key] = round(bucket.tokens, 3)
        return result


async def main() -> None:
    limiter = RateLimiter(capacity=5, per_second=2.5)
    started = time.perf_counter()
    for i in range(12):
        await limiter.acquire("user-42")
        print(f"request {i:02d} at t={time.perf_counter() - started:6.3f}s")
    print(limiter.snapshot())


if __name__ == "__main__":
    asyncio.run(main())
'''

JSON_DOC = """\
{
  "request_id": "req_8f3a2c91d4e54b07",
  "status": "ok",
  "page": {"number": 1, "size": 4, "total_items": 37, "next_cursor": "eyJvZmZzZXQiOjR9"},
  "orders": [
    {
      "order_id": "ORD-2024-118734",
      "created_at": "2024-03-18T09:41:27Z",
      "customer": {"id": 58213, "name": "Helena Marquez", "email": "h.marquez@example.org", "tier": "gold"},
      "shipping_address": {"line1": "14 Harbour View Road", "city": "Portsmouth", "postcode": "PO1 3LT", "country": \
"GB"},
      "items": [
        {"sku": "KB-MECH-87", "title": "Mechanical keyboard, 87 keys, brown switches", "quantity": 1, "unit_price": \
89.99},
        {"sku": "MS-WL-02", "title": "Wireless mouse", "quantity": 2, "unit_price": 24.5}
      ],
      "payment": {"method": "card", "brand": "visa", "last4": "4242", "captured": true},
      "totals": {"subtotal": 138.99, "shipping": 4.95, "tax": 28.79, "grand_total": 172.73, "currency": "GBP"},
      "status": "shipped",
      "tracking": {"carrier": "royal_mail", "number": "RM123456789GB", "eta": "2024-03-21"}
    },
    {
      "order_id": "ORD-2024-118801",
      "created_at": "2024-03-18T11:02:55Z",
      "customer": {"id": 10447, "name": "Tobias Lindqvist", "email": "tobias.l@example.com", "tier": "standard"},
      "shipping_address": {"line1": "Storgatan 7", "city": "Uppsala", "postcode": "753 31", "country": "SE"},
      "items": [
        {"sku": "MON-27-QHD", "title": "27-inch QHD monitor, 165 Hz", "quantity": 1, "unit_price": 329.0}
      ],
      "payment": {"method": "paypal", "captured": false, "failure_reason": "insufficient_funds"},
      "totals": {"subtotal": 329.0, "shipping": 0.0, "tax": 82.25, "grand_total": 411.25, "currency": "SEK"},
      "status": "payment_failed",
      "tracking": null
    },
    {
      "order_id": "ORD-2024-118856",
      "created_at": "2024-03-18T14:37:09Z",
      "customer": {"id": 77102, "name": "Amara Okafor", "email": "amara.okafor@example.net", "tier": "platinum"},
      "shipping_address": {"line1": "221 Lakeshore Drive", "line2": "Apt 9C", "city": "Chicago", "postcode": \
"60611", "country": "US"},
      "items": [
        {"sku": "HDP-ANC-700", "title": "Noise-cancelling headphones", "quantity": 1, "unit_price": 279.0},
        {"sku": "CBL-USBC-2M", "title": "USB-C cable, 2 m, braided", "quantity": 3, "unit_price": 12.99},
        {"sku": "GFT-WRAP", "title": "Gift wrapping", "quantity": 1, "unit_price": 5.0}
      ],
      "payment": {"method": "card", "brand": "amex", "last4": "0005", "captured": true},
      "totals": {"subtotal": 322.97, "shipping": 9.99, "tax": 27.45, "grand_total": 360.41, "currency": "USD"},
      "status": "processing",
      "tracking": null,
      "notes": "Please leave with the concierge if nobody answers."
    },
    {
      "order_id": "ORD-2024-118902",
      "created_at": "2024-03-18T16:05:44Z",
      "customer": {"id": 30988, "name": "Kenji Watanabe", "email": "kenji.w@example.jp", "tier": "standard"},
      "shipping_address": {"line1": "3-12-8 Jingumae", "city": "Shibuya-ku, Tokyo", "postcode": "150-0001", \
"country": "JP"},
      "items": [
        {"sku": "SSD-NVME-2TB", "title": "NVMe SSD 2 TB", "quantity": 2, "unit_price": 17800}
      ],
      "payment": {"method": "konbini", "captured": true},
      "totals": {"subtotal": 35600, "shipping": 800, "tax": 3640, "grand_total": 40040, "currency": "JPY"},
      "status": "delivered",
      "tracking": {"carrier": "yamato", "number": "4401-2233-8812", "delivered_at": "2024-03-20T10:15:00+09:00"}
    }
  ]
}
"""

CHINESE = """\
中国人饮茶的历史可以追溯到几千年以前。传说神农氏尝百草，一日遇七十二毒，得茶而解之。这个故事虽然无法考证，却说\
明茶最初是作为药物被人们认识的。到了汉代，四川一带已经出现了专门买卖茶叶的市场；魏晋南北朝时期，饮茶之风逐渐从\
南方传到北方，成为文人雅士聚会时不可缺少的内容。

唐代是中国茶文化真正成熟的时期。陆羽用了将近三十年的时间走访各地茶区，写成了世界上第一部关于茶的专著《茶经》。\
书中详细记载了茶树的生长环境、采摘和制作的方法、煮茶所用的器具和水的选择，甚至连饮茶的礼仪都有所论述。陆羽认为\
，煮茶用水以山泉为上，江水次之，井水最差；水烧到“鱼目”般的小气泡出现时为一沸，边缘如涌泉连珠时为二沸，腾波鼓\
浪时为三沸，过了三沸水就老了，不宜再用。

宋代的饮茶方式与唐代又有很大不同。当时流行“点茶”，先把茶饼碾成极细的粉末，放入茶盏，再注入少量沸水调成膏状，\
然后一边注水一边用茶筅快速击拂，使茶汤表面泛起一层细腻洁白的泡沫。文人之间还流行“斗茶”，比较谁的茶汤颜色更白\
、泡沫保持得更久。宋徽宗本人就是一位点茶高手，他撰写的《大观茶论》对点茶的技巧作了非常细致的描述。

明朝初年，朱元璋下令废除团茶，改贡散茶，饮茶方式随之发生了根本性的变化。人们不再把茶叶碾成粉末，而是直接用沸水\
冲泡整片的叶子，这就是今天我们最熟悉的泡茶法。与此同时，紫砂壶在江苏宜兴兴起，它透气性好，能够较长时间保持茶的\
香气，很快受到了文人的喜爱。

今天，中国的茶叶按照加工工艺大致可以分为绿茶、白茶、黄茶、青茶、红茶和黑茶六大类。绿茶不经发酵，保留了鲜叶的清\
香，西湖龙井和碧螺春都是其中的代表；青茶也叫乌龙茶，属于半发酵茶，香气浓郁，回味悠长；红茶经过完全发酵，汤色红\
亮，口感醇厚；黑茶则要经过长时间的堆积发酵，云南的普洱茶就是最有名的例子，而且存放的年份越久，往往越受收藏者的\
追捧。

对于很多中国家庭来说，茶早已不只是一种饮料。客人来了，先泡一壶茶；朋友聚会，边喝茶边聊天；逢年过节，茶叶也是常\
见的礼品。在广东和香港，人们习惯在早上“饮早茶”，一盅两件，从清晨一直坐到中午。而在西南的一些少数民族地区，还\
保留着打油茶、烤茶等独特的饮茶习俗。可以说，一杯茶里，既有山水草木的味道，也有千百年来人们生活的温度。

近些年来，年轻人对茶的态度也在悄悄改变。过去，很多人觉得喝茶是长辈的习惯，讲究太多，过程太慢；如今，各种新式茶\
饮店遍布城市的大街小巷，水果茶、奶盖茶、冷泡茶层出不穷，排队买一杯网红奶茶甚至成了周末的消遣。有人担心这样会冲\
淡传统茶文化的韵味，也有人认为，正是这些新的形式让更多年轻人开始关注茶叶本身，进而愿意去了解产地、品种和工艺。

与此同时，茶产业也在经历一场技术变革。在福建、浙江和云南的一些茶园里，无人机被用来监测病虫害，传感器实时记录土\
壤的温度和湿度，电商平台让偏远山区的茶农可以直接把茶叶卖给全国各地的消费者。一位在武夷山种了三十多年岩茶的老师\
傅说，以前一年的收成要等茶商上门才能卖掉，价格也由别人说了算；现在他每天晚上在直播间里介绍自家的茶，订单反而多\
得忙不过来。

不过，无论形式如何变化，好茶的标准其实并没有改变：好的原料，合适的工艺，再加上一颗愿意慢下来的心。找一个安静的\
下午，烧一壶水，看着茶叶在杯中慢慢舒展，也许就是对这门古老学问最好的致敬。
"""

JAPANESE = """\
日本を旅行するなら、鉄道を使わない手はない。東京から大阪までは新幹線でおよそ二時間半、朝の会議を終えてから出発\
しても、昼過ぎには道頓堀でたこ焼きを食べることができる。列車は驚くほど時間に正確で、発車時刻が一分遅れただけで\
も車内放送でお詫びのアナウンスが流れるほどだ。

ただ、日本の鉄道の魅力は速さだけではない。むしろ、ローカル線に乗ってのんびりと移り変わる景色を眺める時間こそが\
、旅の醍醐味だと考える人も多い。たとえば、JR五能線は青森県と秋田県の日本海沿いを走る路線で、窓のすぐ外に荒々\
しい海岸線が続く。晴れた日の夕方には、水平線に沈む夕日が車内をオレンジ色に染め、乗客たちは思わず会話をやめて外\
を見つめてしまう。

駅弁も鉄道旅行には欠かせない楽しみのひとつである。各地の駅では、その土地の名物を詰め込んだ弁当が売られていて、\
北海道ならカニやイクラ、仙台なら牛タン、横浜ならシウマイといった具合に、駅ごとに個性がまったく違う。東京駅の構\
内には全国の駅弁を集めた専門店まであり、出発前にどれを買うか迷ってしまうのもまた楽しい。

外国人旅行者にとって便利なのが「ジャパン・レール・パス」だ。一定期間、JRの列車が乗り放題になるこのパスを使え\
ば、北は北海道から南は九州まで、気の向くままに移動することができる。ただし、二〇二三年に価格が大幅に引き上げら\
れたため、短い旅行であれば区間ごとに切符を買った方が安くなる場合もある。出発前に、自分の行程で本当に得になるの\
かを計算しておくとよいだろう。

一方で、地方の鉄道は深刻な問題を抱えている。人口の減少や自動車の普及によって利用者が年々減り、赤字に苦しむ路線\
が少なくない。すでに廃止されてバスに置き換えられた区間もあれば、地元の自治体や住民が協力して、観光列車を走らせ\
たりイベントを開いたりしながら、なんとか存続させようと努力している路線もある。

それでも、小さな無人駅に降り立ち、ホームに吹く風の匂いを感じながら次の列車を待つひとときには、ほかの交通手段で\
は味わえない特別な時間が流れている。時刻表をめくりながら次の目的地を考える、その時間さえも旅の一部なのだ。

最近では、豪華な寝台列車やレストラン列車も人気を集めている。九州を周遊する「ななつ星」は、数か月前から予約が埋\
まってしまうほどで、木材をふんだんに使った客室や、沿線の食材を生かしたコース料理が評判だ。料金は決して安くない\
が、結婚記念日や退職祝いなど、人生の節目に一度は乗ってみたいという声は多い。

もちろん、観光列車ばかりが鉄道旅の楽しみではない。朝の通勤電車に揺られる会社員、部活帰りの高校生、買い物袋を抱\
えたお年寄りなど、車内の何気ない風景にも、その土地の暮らしがにじみ出ている。方言の混じった会話に耳を傾けたり、\
車窓に広がる田んぼの色で季節の移ろいを感じたりするのも、旅人だけに許されたささやかな贅沢だろう。

旅の計画を立てるときは、乗り換え案内のアプリが欠かせない。出発地と目的地を入力するだけで、最短ルートや料金、乗\
り換えの回数まで一瞬で表示してくれる。しかし、あえて最短ではない経路を選び、知らない駅で途中下車してみると、思\
いがけない出会いが待っていることもある。
"""

RUSSIAN = """\
Байкал называют жемчужиной Сибири, и это сравнение вовсе не преувеличение. Озеро, вытянувшееся \
полумесяцем почти на шестьсот тридцать километров, хранит около двадцати процентов всей пресной \
поверхностной воды планеты. Его максимальная глубина превышает тысячу шестьсот метров, а возраст, по \
оценкам учёных, составляет от двадцати пяти до тридцати миллионов лет. Большинство озёр на Земле \
живут лишь несколько десятков тысяч лет, постепенно заиливаясь и превращаясь в болота, но Байкал \
продолжает медленно расширяться: берега расходятся на несколько миллиметров в год.

Вода в озере удивительно прозрачна. В ясную погоду камни на дне можно разглядеть на глубине до \
сорока метров. Отчасти это заслуга крошечного рачка эпишуры, который миллионами особей фильтрует \
воду, поедая водоросли и бактерии. Без этого незаметного труженика Байкал, вероятно, выглядел бы \
совсем иначе.

Из более чем двух с половиной тысяч видов животных, обитающих в озере, примерно две трети не \
встречаются больше нигде в мире. Самый известный из них — байкальская нерпа, единственный в мире \
тюлень, живущий в пресной воде. Как она попала в самое сердце континента, за тысячи километров от \
ближайшего моря, до сих пор остаётся предметом споров. Одни исследователи считают, что предки нерпы \
пришли с севера по рекам во время одного из ледниковых периодов, другие предлагают иные маршруты, но \
окончательного ответа пока нет.

Зимой Байкал превращается в совершенно другой мир. К январю озеро покрывается льдом толщиной до \
метра, и по нему прокладывают официальные ледовые переправы, по которым ходят даже автомобили. Лёд \
здесь настолько чистый, что сквозь него видно тёмную глубину, а в морозные ночи он трескается с \
громким гулом, похожим на выстрелы или раскаты грома. Туристы со всей страны и из-за рубежа \
приезжают, чтобы пройти по льду на коньках, сфотографировать ледяные гроты острова Ольхон или просто \
постоять посреди бескрайней застывшей глади.

Однако у этой красоты есть и уязвимая сторона. Рост туризма, сброс сточных вод из прибрежных \
посёлков и изменение климата уже заметно влияют на экосистему озера. В некоторых бухтах разрастаются \
нитчатые водоросли, которые раньше здесь почти не встречались, а численность омуля, главной \
промысловой рыбы Байкала, сократилась настолько, что в две тысячи семнадцатом году его вылов \
пришлось временно запретить. Учёные Лимнологического института в Иркутске ведут постоянный \
мониторинг и предупреждают, что восстановление займёт не одно десятилетие.

Местные жители относятся к Байкалу с особым уважением и нередко называют его не озером, а морем. \
Среди бурят до сих пор живы старинные обычаи: прежде чем отправиться в путь по воде, принято \
оставить на берегу небольшое подношение духам. Возможно, именно это бережное отношение, передающееся \
из поколения в поколение, и поможет сохранить озеро для тех, кто придёт после нас.
"""

ARABIC = """\
تُعدّ النخلة من أقدم الأشجار التي عرفها الإنسان في شبه الجزيرة العربية وبلاد الرافدين، وقد ارتبطت \
بحياة سكان هذه المناطق ارتباطًا وثيقًا منذ آلاف السنين. فقد عثر علماء الآثار على بقايا نوى التمر في \
مواقع يعود تاريخها إلى أكثر من سبعة آلاف عام، كما تظهر النخلة في النقوش السومرية والبابلية رمزًا \
للخصب والعطاء والحياة.

ولم تكن النخلة مصدرًا للغذاء فحسب، بل كانت تمدّ الإنسان بكل ما يحتاج إليه تقريبًا. فمن جذوعها صُنعت \
أعمدة البيوت وسقوفها، ومن سعفها نُسجت الحصر والسلال والمراوح، ومن أليافها فُتلت الحبال، أما نواها \
فكان يُطحن ويُقدَّم علفًا للماشية. ولهذا قال بعض الكتّاب القدماء إن للنخلة من الفوائد بعدد أيام \
السنة.

ويحتل التمر مكانة خاصة في الثقافة العربية والإسلامية؛ إذ جرت العادة أن يفطر الصائمون في شهر رمضان \
على التمر والماء، وأن يُقدَّم التمر مع القهوة العربية ترحيبًا بالضيوف. وتتنوع أصناف التمور تنوعًا \
كبيرًا يصل إلى مئات الأصناف، لكل منها لونه وطعمه وقوامه الخاص، فمنها الطري الذي يذوب في الفم، ومنها \
الجاف الذي يمكن حفظه شهورًا طويلة دون أن يفسد.

وتحتاج النخلة إلى ظروف مناخية خاصة لكي تثمر ثمرًا جيدًا، فهي تحب الشمس الحارقة والهواء الجاف، لكنها \
في الوقت نفسه تحتاج إلى كميات كبيرة من الماء عند جذورها. ولذلك قال المزارعون قديمًا إن النخلة تحب أن \
يكون رأسها في النار وقدماها في الماء. وتبدأ النخلة بالإثمار عادة بعد أربع إلى ثماني سنوات من \
زراعتها، وقد تستمر في العطاء أكثر من ستين عامًا إذا حظيت بالعناية اللازمة.

وفي العقود الأخيرة شهدت زراعة النخيل تطورًا ملحوظًا بفضل التقنيات الحديثة، مثل الري بالتنقيط وزراعة \
الأنسجة التي تتيح إنتاج آلاف الفسائل المتطابقة وراثيًا من نخلة واحدة متميزة. كما أنشأت عدة دول في \
المنطقة مراكز بحثية متخصصة لمكافحة الآفات التي تهدد النخيل، وأخطرها سوسة النخيل الحمراء التي تحفر \
داخل الجذع وقد تقتل الشجرة قبل أن تظهر عليها أي علامات واضحة.

وعلى الرغم من كل هذه التحولات، ما زالت النخلة تحتفظ بمكانتها الرمزية في وجدان الناس. فهي تزيّن \
شعارات عدد من الدول، وتُذكر في الأشعار والأمثال الشعبية، ويحرص كثير من الأسر على زراعة نخلة واحدة \
على الأقل في فناء البيت، وكأنها فرد من أفراد العائلة يشهد على أفراحها وأحزانها جيلًا بعد جيل.
"""

SAMPLES = {
    "english_prose": EN_PROSE,
    "code": CODE,
    "json": JSON_DOC,
    "chinese": CHINESE,
    "japanese": JAPANESE,
    "russian": RUSSIAN,
    "arabic": ARABIC,
}


# --- helpers ---------------------------------------------------------------------------------
def _official_encoding(name: str, cache_dir: Path) -> Any:
    """tiktoken's own encoding ``name``, built from the bpe-openai gz file through tiktoken's loader."""
    packaged = next((f for f in metadata.files("bpe-openai") or [] if f.name == f"{name}.tiktoken.gz"), None)
    if packaged is None:
        pytest.skip(f"bpe-openai does not ship {name}.tiktoken.gz")
    import tiktoken_ext.openai_public as public

    cache_dir.mkdir(parents=True, exist_ok=True)
    data = gzip.decompress(Path(str(packaged.locate())).read_bytes())
    (cache_dir / hashlib.sha1(RANK_URLS[name].encode()).hexdigest()).write_bytes(data)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TIKTOKEN_CACHE_DIR", str(cache_dir))
        spec = getattr(public, name)()
    return tiktoken.Encoding(**spec)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Independent tiktoken encodings, one per name, not built by the code under test."""
    cache = tmp_path_factory.mktemp("tiktoken-cache")
    return {name: _official_encoding(name, cache) for name in RANK_URLS}


def _strings(value: Any) -> Iterator[str]:
    """Every string anywhere in a JSON value."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _trajectory_strings() -> list[str]:
    """Every distinct string content of the JSON files under the shared trajectories."""
    if not TRAJECTORIES.is_dir():
        pytest.skip(f"shared trajectories not found at {TRAJECTORIES} (a fresh clone has no ../shared)")
    found: dict[str, None] = {}
    for path in sorted(TRAJECTORIES.rglob("*")):
        if path.suffix in (".json", ".traj"):
            found.update(dict.fromkeys(_strings(json.loads(path.read_text(encoding="utf-8")))))
        elif path.suffix == ".jsonl":
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    found.update(dict.fromkeys(_strings(json.loads(line))))
    return list(found)


def _pieces(text: str, count: int) -> list[str]:
    """``text`` cut at sentence ends into about ``count`` pieces of similar size."""
    units = [u for u in re.split(r"(?<=[.!?。！？\n])\s*", text) if u.strip()]
    size = sum(map(len, units)) / count
    pieces, current = [], ""
    for unit in units:
        current += unit + " "
        if len(current) >= size:
            pieces.append(current.strip())
            current = ""
    if current.strip():
        pieces.append(current.strip())
    return pieces


def _conversation(text: str, count: int) -> list[Message]:
    pieces = _pieces(text, count)
    return [Message(role="user" if i % 2 == 0 else "assistant", content=p) for i, p in enumerate(pieces)]


class CountingBackend:
    """Wraps a backend and records every text it is asked to count."""

    def __init__(self, inner: TextCounter) -> None:
        self.inner = inner
        self.name = f"counting:{inner.name}"
        self.exact = getattr(inner, "exact", False)
        self.texts: list[str] = []

    def count(self, text: str) -> int:
        self.texts.append(text)
        return self.inner.count(text)


class BrokenBackend:
    name = "broken"

    def count(self, text: str) -> int:
        raise RuntimeError("backend exploded")


def _warnings(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == LOGGER and r.levelno == logging.WARNING]


def _exact(encoding: str = "o200k_base") -> TokenCounter:
    return TokenCounter(backend=TiktokenBackend(encoding))


# --- exact counts offline ------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize(("model", "encoding"), [("gpt-4o", "o200k_base"), ("gpt-4", "cl100k_base")])
def test_counts_equal_tiktoken_on_every_trajectory_string(
    model: str, encoding: str, reference: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    texts = _trajectory_strings()
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))  # nothing cached: only the packaged file is there
    counter = TokenCounter(model)
    assert counter.backend.name == f"tiktoken:{encoding}"
    assert counter.exact
    ref = reference[encoding]
    differences = [t[:80] for t in texts if counter.count_text(t) != len(ref.encode_ordinary(t))]
    assert len(texts) > 1_000
    assert differences == []


@pytest.fixture(scope="module")
def fast() -> dict[str, TiktokenBackend]:
    """One ``fast=True`` backend per encoding (built once: loading the Rust counter takes a fraction of a second)."""
    return {e: TiktokenBackend(e, fast=True) for e in RANK_URLS}


@settings(max_examples=400, deadline=None)
@given(encoding=st.sampled_from(sorted(RANK_URLS)), text=st.text(max_size=200))
def test_the_rust_counter_equals_tiktoken_on_any_text(
    encoding: str, text: str, fast: dict[str, TiktokenBackend], reference: dict[str, Any]
) -> None:
    """bpe-openai's counter stands in for tiktoken only because it gives the same count, lone surrogates included."""
    assert fast[encoding]._fast is not None  # the fast path is what is tested
    assert fast[encoding].count(text) == len(reference[encoding].encode_ordinary(text))


def test_the_rust_counter_is_opt_in_and_changes_no_count(fast: dict[str, TiktokenBackend]) -> None:
    slow = TiktokenBackend("o200k_base")
    assert slow._fast is None  # it holds the GIL: the default leaves the record writer its turns
    texts = [*SAMPLES.values(), "x" * 20_000, "a\ud800b", ""]
    assert [slow.count(t) for t in texts] == [fast["o200k_base"].count(t) for t in texts]


@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
def test_counts_equal_tiktoken_on_samples_and_special_text(encoding: str, reference: dict[str, Any]) -> None:
    counter = _exact(encoding)
    texts = [*SAMPLES.values(), "<|endoftext|> is plain text here", "", " ", "\n\n\t", "🎉 ok", "x" * 5000]
    assert [counter.count_text(t) for t in texts] == [len(reference[encoding].encode_ordinary(t)) for t in texts]


def test_backend_is_chosen_per_model_family() -> None:
    assert encoding_for_model(None) == "o200k_base"
    assert encoding_for_model("gpt-4o-mini") == "o200k_base"
    assert encoding_for_model("openai/gpt-4.1") == "o200k_base"
    assert encoding_for_model("gpt-4") == "cl100k_base"
    assert encoding_for_model("gpt-3.5-turbo") == "cl100k_base"
    assert encoding_for_model("claude-sonnet-4") == "o200k_base"
    assert TokenCounter("gpt-4o").exact
    assert TokenCounter("gpt-4").backend.name == "tiktoken:cl100k_base"
    stand_in = TokenCounter("gemini-2.0-flash")
    assert stand_in.backend.name == "tiktoken:o200k_base"
    assert not stand_in.exact  # o200k only approximates Gemini's tokenizer: calibration applies


def test_load_encoding_reads_a_configured_directory_without_network(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "empty-cache"))
    packaged = next(f for f in metadata.files("bpe-openai") or [] if f.name == "cl100k_base.tiktoken.gz")
    (tmp_path / "cl100k_base.tiktoken.gz").write_bytes(Path(str(packaged.locate())).read_bytes())
    encoding = load_encoding("cl100k_base", tmp_path, allow_packaged=False)
    assert encoding.encode_ordinary("hello world") == [15339, 1917]


def test_load_encoding_skips_corrupt_files_and_never_downloads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    attempts: list[object] = []

    def refuse(*args: object, **kwargs: object) -> None:
        attempts.append(args)
        raise ConnectionRefusedError("no network in this test")

    monkeypatch.setattr("socket.create_connection", refuse)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    (tmp_path / "o200k_base.tiktoken").write_bytes(b"not a rank file\n")
    cache_name = hashlib.sha1(RANK_URLS["o200k_base"].encode()).hexdigest()
    (tmp_path / cache_name).write_bytes(b"corrupt cache entry\n")
    with pytest.raises(LookupError):
        load_encoding("o200k_base", tmp_path, allow_packaged=False)
    with pytest.raises(ConfigError):
        load_encoding("p50k_base")
    assert attempts == []


# --- offline fallback ----------------------------------------------------------------------
def test_no_network_and_no_rank_files_gives_estimate_and_one_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "cache"))
    empty = tmp_path / "ranks"
    empty.mkdir()
    caplog.set_level(logging.WARNING, logger=LOGGER)
    counter = TokenCounter("gpt-4o", rank_files_dir=str(empty), allow_packaged=False)
    messages = _conversation(EN_PROSE, 6)
    assert counter.count_text(EN_PROSE) == estimate_tokens(EN_PROSE)
    assert counter.count_prompt(messages) > 0
    assert counter.count_message(messages[0]) > MESSAGE_OVERHEAD
    assert counter.count_tools([{"name": "f", "description": "d", "parameters": {}}]) > 0
    assert isinstance(counter.backend, EstimateBackend)
    assert not counter.exact
    warnings = _warnings(caplog)
    assert len(warnings) == 1
    assert "'estimate'" in warnings[0].getMessage()
    assert "tiktoken:o200k_base" in warnings[0].getMessage()


def test_a_failing_backend_falls_back_with_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    counter = TokenCounter(backend=BrokenBackend())
    assert counter.count_text("hello there") == estimate_tokens("hello there")
    assert counter.count_prompt(_conversation(RUSSIAN, 5)) > 0
    assert counter.backend.name == "estimate"
    warnings = _warnings(caplog)
    assert len(warnings) == 1
    assert "broken" in warnings[0].getMessage()
    assert "'estimate'" in warnings[0].getMessage()


# --- the estimate --------------------------------------------------------------------------
@pytest.mark.parametrize("kind", list(SAMPLES))
def test_estimate_is_within_15_percent_of_o200k(kind: str, reference: dict[str, Any]) -> None:
    text = SAMPLES[kind]
    exact = len(reference["o200k_base"].encode_ordinary(text))
    estimate = EstimateBackend().count(text)
    assert abs(estimate / exact - 1) < 0.15, f"{kind}: estimate {estimate} vs o200k {exact}"


def test_estimate_is_not_a_plain_character_ratio() -> None:
    per_char = {kind: estimate_tokens(text) / len(text) for kind, text in SAMPLES.items()}
    assert per_char["chinese"] > 3 * per_char["english_prose"]
    assert per_char["json"] > 1.3 * per_char["english_prose"]


@pytest.mark.parametrize(
    "text",
    ["=" * 80 + "\n", " " * 1000, "\n" * 100, "─" * 60, "🎉🎉 done", "x", "٣٤٥ ١٢", "ĉu vi parolas? — jes!"],
)
def test_estimate_handles_runs_and_rare_text(text: str, reference: dict[str, Any]) -> None:
    exact = len(reference["o200k_base"].encode_ordinary(text))
    assert abs(estimate_tokens(text) - exact) <= max(2, exact // 2)


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_estimate_never_raises_and_is_positive_for_text(text: str) -> None:
    value = estimate_tokens(text)
    assert isinstance(value, int)
    assert (value == 0) == (text == "")


# --- calibration ---------------------------------------------------------------------------
@pytest.mark.parametrize("kind", list(SAMPLES))
def test_one_calibration_brings_the_next_calls_within_2_percent(kind: str) -> None:
    messages = [Message(role="system", content="You are a helpful assistant."), *_conversation(SAMPLES[kind], 14)]
    estimate, exact = TokenCounter(backend=EstimateBackend()), _exact()
    middle = len(messages) // 2
    estimate.calibrate(estimate.count_prompt(messages[:middle]), exact.count_prompt(messages[:middle]))
    for end in (middle + 1, middle + 2):
        error = estimate.count_prompt(messages[:end]) / exact.count_prompt(messages[:end]) - 1
        assert abs(error) < 0.02, f"{kind}: {error:+.3f} on call with {end} messages"


def test_calibration_in_an_agent_session_with_tools() -> None:
    path = TRAJECTORIES / "tau-bench" / "gpt-4o-airline.json"
    if not path.is_file():
        pytest.skip(f"shared trajectories not found at {TRAJECTORIES} (a fresh clone has no ../shared)")
    from agno_compression.eval import load_trajectories

    messages = max((t.messages for t in load_trajectories(path)), key=len)
    estimate, exact = TokenCounter(backend=EstimateBackend()), _exact()
    calls = [end for end, m in enumerate(messages, 1) if m.role in ("user", "tool")]
    first = calls[len(calls) // 3]
    estimate.calibrate(estimate.count_prompt(messages[:first]), exact.count_prompt(messages[:first]))
    for end in [c for c in calls if c > first][:3]:
        error = estimate.count_prompt(messages[:end]) / exact.count_prompt(messages[:end]) - 1
        assert abs(error) < 0.02, f"{error:+.3f} on call with {end} messages"


def test_calibration_moves_by_an_exponential_ratio_and_ignores_bad_input() -> None:
    counter = TokenCounter(backend=EstimateBackend(), calibration_alpha=0.5)
    assert counter.correction == 1.0
    assert counter.calibrate(100, 110) == pytest.approx(1.1)
    base = estimate_tokens(EN_PROSE)
    assert counter.count_text(EN_PROSE) == round(base * 1.1)
    # The next report is relative to the corrected estimate: 1.1 * (121 / 110) = 1.21, half-way -> 1.155.
    assert counter.calibrate(110, 121) == pytest.approx(1.155)
    for bad in [(0, 100), (100, 0), (-5, 10), (float("nan"), 10), ("x", 10)]:
        assert counter.calibrate(*bad) == pytest.approx(1.155)  # type: ignore[arg-type]
    counter.reset_calibration()
    assert counter.count_text(EN_PROSE) == base


def test_a_real_tokenizer_is_scaled_up_by_calibration_never_down() -> None:
    counter = TokenCounter("claude-sonnet-4-5")  # o200k, not Anthropic's own tokenizer
    assert not counter.exact
    raw = counter.count_text(EN_PROSE)
    counter.calibrate(1_000, 970)  # the provider counted a little less: the budget still holds in o200k
    assert counter.correction == 1.0 and counter.count_text(EN_PROSE) == raw
    counter.calibrate(1_000, 1_100)  # more: counts follow the provider's
    assert counter.correction > 1.0 and counter.count_text(EN_PROSE) > raw


def test_calibration_has_no_effect_on_exact_backends() -> None:
    counter = _exact()
    before = counter.count_text(EN_PROSE)
    assert counter.calibrate(100, 150) == 1.0
    assert counter.count_text(EN_PROSE) == before
    assert counter.correction == 1.0


# --- messages and tools as the provider sees them -------------------------------------------
def test_plain_messages_follow_openai_chat_accounting() -> None:
    counter = _exact()
    user = Message(role="user", content="hello world")
    named = Message(role="user", content="hello world", name="alice")
    assert counter.count_message(user) == MESSAGE_OVERHEAD + 2
    assert counter.count_message(named) == MESSAGE_OVERHEAD + 2 + NAME_OVERHEAD + counter.count_text("alice")
    assert counter.count_messages([user]) == MESSAGE_OVERHEAD + 2 + PROMPT_OVERHEAD
    assert counter.count_messages([]) == PROMPT_OVERHEAD


def test_tool_calls_and_results_are_counted() -> None:
    counter = _exact()
    arguments = '{"city": "Paris", "unit": "c"}'
    call = Message(
        role="assistant",
        tool_calls=[{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": arguments}}],
    )
    expected = MESSAGE_OVERHEAD + TOOL_CALL_OVERHEAD + counter.count_text("get_weather") + counter.count_text(arguments)
    assert counter.count_message(call) == expected
    dict_args = Message(
        role="assistant",
        tool_calls=[{"function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}}],
    )
    assert counter.count_message(dict_args) == expected
    result = Message(role="tool", tool_call_id="call_1", content=JSON_DOC)
    full = counter.count_message(result)
    assert full == MESSAGE_OVERHEAD + TOOL_RESULT_OVERHEAD + counter.count_text(JSON_DOC)
    result.compressed_content = "4 orders, 1 failed payment"
    assert counter.count_message(result) == MESSAGE_OVERHEAD + TOOL_RESULT_OVERHEAD + counter.count_text(
        "4 orders, 1 failed payment"
    )


def _weather(city: str, unit: str = "c") -> str:
    """Get the current weather for a city.

    Args:
        city: The city name, e.g. Paris.
        unit: Temperature unit, c or f.
    """
    return f"{city}: 18{unit}"


def test_tool_schemas_from_functions_and_dicts_count_the_same() -> None:
    counter = _exact()
    function = Function.from_callable(_weather)
    schema = function.to_dict()
    wrapped = {"type": "function", "function": schema}
    assert counter.count_tools([function]) == counter.count_tools([schema]) == counter.count_tools([wrapped])
    # Tools are counted one by one (for caching); joining them can move a token boundary by one.
    assert abs(counter.count_tools([function]) - counter.count_text(render_tools([function]))) <= 1
    assert counter.count_tools(None) == counter.count_tools([]) == 0
    rendered = render_tools([schema])
    assert "type _weather = (_: {" in rendered
    assert "// The city name, e.g. Paris." in rendered
    assert "unit?: string," in rendered


def test_count_prompt_adds_messages_tools_and_response_format() -> None:
    counter = _exact()
    messages = _conversation(EN_PROSE, 4)
    tools = [Function.from_callable(_weather)]
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}}
    assert counter.count_prompt(messages) == counter.count_messages(messages)
    assert counter.count_prompt(messages, tools) == counter.count_messages(messages) + counter.count_tools(tools)
    with_schema = counter.count_prompt(messages, tools, output_schema=schema)
    assert with_schema == counter.count_prompt(messages, tools) + counter.count_text(json.dumps(schema))


def test_images_of_unknown_size_are_counted_at_the_most_without_reading_them() -> None:
    from agno.media import Image

    gpt = TokenCounter("gpt-4o", backend=TiktokenBackend("o200k_base"))  # at most 1,445 (768 x 2048 px), low 85
    plain = Message(role="user", content="what is this?")
    with_image = Message(role="user", content="what is this?", images=[Image(url="https://example.com/cat.png")])
    low = Message(role="user", content="what is this?", images=[Image(url="https://example.com/c.png", detail="low")])
    assert gpt.count_message(with_image) - gpt.count_message(plain) == 1_445
    assert gpt.count_message(low) - gpt.count_message(plain) == 85
    parts = [{"type": "text", "text": "what is this?"}, {"type": "image_url", "image_url": {"url": "data:..."}}]
    assert gpt.count_message(Message(role="user", content=parts)) - gpt.count_message(plain) == 1_445
    anyone = _exact()  # no model: the most of the providers' rules for an image, whatever its detail
    assert anyone.count_message(low) - anyone.count_message(plain) == 1_844


def test_message_text_keeps_its_shape() -> None:
    call = Message(role="assistant", content="checking", tool_calls=[{"function": {"name": "f", "arguments": "{}"}}])
    assert message_text(call) == "checking\nf({})"
    tool = Message(role="tool", content="long output", compressed_content="short")
    assert message_text(tool) == "short"
    assert message_text(tool, False) == "long output"
    assert message_text(tool, use_compressed_content=False) == "long output"


def test_tokens_all_is_complete_and_documented() -> None:
    """``agno_compression.tokens`` exports exactly its public names, each defined there with its own docstring."""
    public = {n for n, v in vars(tokens_api).items() if not n.startswith("_") and not isinstance(v, type(tokens_api))}
    assert public == set(tokens_api.__all__), (public - set(tokens_api.__all__), set(tokens_api.__all__) - public)
    for name in tokens_api.__all__:
        obj = getattr(tokens_api, name)
        assert obj.__module__.startswith("agno_compression.tokens."), name
        doc = obj.__dict__.get("__doc__") if isinstance(obj, type) else obj.__doc__
        # a dataclass without a docstring gets a generated "Name(field, ...)" one: not documentation
        assert doc and doc.strip() and not doc.startswith(f"{name}("), f"{name} has no docstring"


def test_count_tokens_accepts_text_messages_and_lists() -> None:
    message = Message(role="user", content="hello world")
    assert count_tokens("hello world") == 2
    assert count_tokens("hello world", model="gpt-4") == 2
    assert count_tokens(message) == MESSAGE_OVERHEAD + 2
    assert count_tokens([message, message]) == 2 * (MESSAGE_OVERHEAD + 2) + PROMPT_OVERHEAD


# --- incremental counting -------------------------------------------------------------------
def test_recounting_after_one_new_message_counts_only_that_message() -> None:
    backend = CountingBackend(TiktokenBackend("o200k_base"))
    counter = TokenCounter(backend=backend)
    messages = [*_conversation(EN_PROSE + CODE + JSON_DOC + RUSSIAN, 150)]
    messages = (messages * 3)[:150] if len(messages) < 150 else messages[:150]
    messages = [Message(role=m.role, content=m.content) for m in messages]  # distinct ids
    first = counter.count_prompt(messages)
    assert len(backend.texts) >= 150
    backend.texts.clear()
    new = Message(role="user", content="And one more question about the lighthouse keepers?")
    second = counter.count_prompt([*messages, new])
    assert backend.texts == [new.content]
    assert second == first + counter.count_message(new)


def test_cache_follows_content_changes_of_the_same_message() -> None:
    backend = CountingBackend(TiktokenBackend("o200k_base"))
    counter = TokenCounter(backend=backend)
    tool = Message(role="tool", tool_call_id="c1", content=JSON_DOC)
    before = counter.count_message(tool)
    tool.compressed_content = "four orders"
    after = counter.count_message(tool)
    assert after < before
    assert backend.texts[-1] == "four orders"
    backend.texts.clear()
    assert counter.count_message(tool) == after
    assert backend.texts == []


def test_prompt_recount_sees_in_place_changes_and_serves_history_copies() -> None:
    backend = CountingBackend(TiktokenBackend("o200k_base"))
    counter = TokenCounter(backend=backend)
    messages = _conversation(EN_PROSE, 6)
    tool = Message(role="tool", tool_call_id="c1", content=JSON_DOC)
    messages.append(tool)
    counter.count_prompt(messages)
    backend.texts.clear()
    messages[0].content = "A different first question."
    tool.compressed_content = "four orders"
    changed = counter.count_prompt(messages)
    assert sorted(backend.texts) == sorted(["A different first question.", "four orders"])
    assert changed == _exact().count_prompt(messages)
    backend.texts.clear()
    copies = [
        Message(id=m.id, role=m.role, content=m.content, compressed_content=m.compressed_content) for m in messages
    ]
    assert counter.count_prompt(copies) == changed
    assert backend.texts == []


def test_a_text_is_encoded_once_and_counted_as_before() -> None:
    """count_text caches by content: a summarizer counts the same lines fold after fold."""
    backend = CountingBackend(EstimateBackend())
    counter = TokenCounter(backend=backend)
    uncached = TokenCounter(backend=EstimateBackend(), cache_size=0)
    for text in ("- call ls()", "- call ls()", "- call cat()", "", "- call ls()"):
        assert counter.count_text(text) == uncached.count_text(text)
    assert backend.texts == ["- call ls()", "- call cat()"]


def test_cache_size_zero_disables_caching() -> None:
    backend = CountingBackend(EstimateBackend())
    counter = TokenCounter(backend=backend, cache_size=0)
    message = Message(role="user", content="hi there")
    counter.count_message(message)
    counter.count_message(message)
    assert backend.texts == ["hi there", "hi there"]


def test_a_counter_keeps_no_counted_message_or_tool_alive_and_its_caches_bounded() -> None:
    """A long-lived counter (the manager's, ``count_tokens``'s) holds counts, not the messages and tools it saw."""
    import gc
    import weakref

    backend = CountingBackend(EstimateBackend())
    counter = TokenCounter(backend=backend, cache_size=64)
    kept = Message(role="user", content="kept alive by the caller")
    gone = [Message(role="tool", tool_call_id=f"c{i}", content=f"output {i} " * 50) for i in range(300)]
    tools = [Function(name=f"tool_{i}", description="a tool", parameters={"type": "object"}) for i in range(300)]
    refs = [weakref.ref(m) for m in gone] + [weakref.ref(t) for t in tools]
    first = counter.count_prompt([kept, *gone], tools)
    assert counter.count_prompt([kept, *gone], tools) == first  # the same objects again: counted from memory
    texts = len(backend.texts)
    del gone, tools
    gc.collect()
    assert all(r() is None for r in refs), "a counted message or tool definition outlived its caller"
    counter.count_messages([kept])
    assert len(backend.texts) == texts, "a message still alive is still recognised"
    for i in range(1_000):
        counter.count_text(f"line {i}")
    assert len(counter._cache) <= 64


# --- configuration ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs",
    [
        {"cache_size": -1},
        {"cache_size": 1.5},
        {"calibration_alpha": 0},
        {"calibration_alpha": 1.5},
        {"backend": object()},
        {"backend": EstimateBackend(), "tokenizer_file": "tokenizer.json"},
    ],
)
def test_bad_configuration_raises_config_error(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        TokenCounter(**kwargs)


# --- Hugging Face tokenizer.json --------------------------------------------------------------
TINY_TOKENIZER: dict[str, Any] = {
    "version": "1.0",
    "truncation": None,
    "padding": None,
    "added_tokens": [],
    "normalizer": None,
    "pre_tokenizer": {"type": "Whitespace"},
    "post_processor": None,
    "decoder": None,
    "model": {"type": "WordLevel", "vocab": {"[UNK]": 0, "hello": 1, "world": 2}, "unk_token": "[UNK]"},
}


def test_hf_backend_names_the_package_to_install_when_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(TINY_TOKENIZER))
    monkeypatch.setitem(sys.modules, "tokenizers", None)  # what an environment without it looks like
    with pytest.raises(ConfigError, match="pip install tokenizers"):
        HFTokenizerBackend(path)
    with pytest.raises(ConfigError, match="tokenizers"):
        TokenCounter(tokenizer_file=path)


def test_hf_backend_counts_with_a_tokenizer_json(tmp_path: Path) -> None:
    pytest.importorskip("tokenizers", reason="the optional 'tokenizers' package is not installed")
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(TINY_TOKENIZER))
    counter = TokenCounter("some-local-model", tokenizer_file=path)
    assert counter.backend.name.startswith("hf:")
    assert counter.count_text("hello world, hello!") == 5  # hello world , hello !
    assert counter.exact
    assert counter.calibrate(10, 20) == 1.0
    with pytest.raises(ConfigError, match="not found"):
        HFTokenizerBackend(tmp_path / "missing.json")


# --- Gemini countTokens ----------------------------------------------------------------------
def _gemini_client(base_url: str) -> Any:
    from google import genai
    from google.genai import types

    options = types.HttpOptions(base_url=base_url, retry_options=types.HttpRetryOptions(attempts=1))
    return genai.Client(api_key="test-key", http_options=options)


def test_gemini_backend_asks_count_tokens_once_per_text(httpserver: Any) -> None:
    httpserver.expect_request(re.compile(r".*/models/gemini-2\.0-flash:countTokens"), method="POST").respond_with_json(
        {"totalTokens": 7}
    )
    backend = GeminiCountBackend(_gemini_client(httpserver.url_for("/")), "gemini-2.0-flash")
    counter = TokenCounter("gemini-2.0-flash", backend=backend)
    assert counter.count_text("hello gemini") == 7
    assert counter.count_text("hello gemini") == 7
    assert counter.count_text("") == 0
    assert len(httpserver.log) == 1
    request = httpserver.log[0][0]
    assert "hello gemini" in request.get_data(as_text=True)
    assert counter.exact
    assert backend.name == "gemini:gemini-2.0-flash"


def test_gemini_errors_fall_back_to_the_estimate_once(httpserver: Any, caplog: pytest.LogCaptureFixture) -> None:
    httpserver.expect_request(re.compile(r".*:countTokens"), method="POST").respond_with_json(
        {"error": {"code": 400, "message": "bad", "status": "INVALID_ARGUMENT"}}, status=400
    )
    caplog.set_level(logging.WARNING, logger=LOGGER)
    counter = TokenCounter(backend=GeminiCountBackend(_gemini_client(httpserver.url_for("/")), "gemini-2.0-flash"))
    assert counter.count_text("hello there") == estimate_tokens("hello there")
    assert counter.count_text("and again") == estimate_tokens("and again")
    warnings = _warnings(caplog)
    assert len(warnings) == 1
    assert "gemini:gemini-2.0-flash" in warnings[0].getMessage()
    assert "'estimate'" in warnings[0].getMessage()


def test_gemini_backend_validates_its_configuration() -> None:
    with pytest.raises(ConfigError):
        GeminiCountBackend(object(), "gemini-2.0-flash")
    with pytest.raises(ConfigError):
        GeminiCountBackend(_gemini_client("http://127.0.0.1:9/"), "")
